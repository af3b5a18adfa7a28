-- Notes the agent leaves itself (`ctx_note`). A session note belongs to one session and is
-- shown back to it on request. A smart note belongs to a project and carries the condition
-- under which it should resurface; it waits as `pending` until the dreamer evaluates it.
CREATE TABLE notes (
    id INTEGER PRIMARY KEY,
    project_id TEXT,
    session_id TEXT,
    content TEXT NOT NULL CHECK (length(trim(content)) > 0),
    surface_condition TEXT,
    status TEXT NOT NULL CHECK (status IN ('active', 'pending', 'dismissed')),
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    -- A smart note has a condition and a project; a session note has a session.
    CHECK ((surface_condition IS NULL AND session_id IS NOT NULL)
        OR (surface_condition IS NOT NULL AND project_id IS NOT NULL))
) STRICT;

CREATE INDEX notes_by_session ON notes(session_id, status);
CREATE INDEX notes_by_project ON notes(project_id, status);

-- Notes are searched like memories: through the notes table itself (external content).
CREATE VIRTUAL TABLE note_search USING fts5(
    content,
    content = 'notes',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER note_search_insert AFTER INSERT ON notes
BEGIN
    INSERT INTO note_search (rowid, content) VALUES (new.id, new.content);
END;

CREATE TRIGGER note_search_update AFTER UPDATE OF content ON notes
BEGIN
    INSERT INTO note_search (note_search, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO note_search (rowid, content) VALUES (new.id, new.content);
END;

CREATE TRIGGER note_search_delete AFTER DELETE ON notes
BEGIN
    INSERT INTO note_search (note_search, rowid, content) VALUES ('delete', old.id, old.content);
END;
