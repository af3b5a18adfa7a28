-- The team store's local side (issue 34): a read-through cache of the project knowledge a
-- team keeps in PostgreSQL, and the durable queue of writes made while it was unreachable.
--
-- Cached rows keep the team store's ids and versions, in tables of their own: a team id may
-- equal the id of a memory of another, local-only project in `memories`.
CREATE TABLE team_memories (
    row INTEGER PRIMARY KEY,
    project_id TEXT NOT NULL,
    id INTEGER NOT NULL,
    category TEXT NOT NULL,
    content TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'permanent', 'archived')),
    source TEXT NOT NULL,
    seen_count INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    superseded_by INTEGER,
    version INTEGER NOT NULL,
    UNIQUE (project_id, id)
);

-- Full text over the cache, tokenised as `memory_search` is, so a search reads the same
-- whichever store holds the memories.
CREATE VIRTUAL TABLE team_memory_search USING fts5(
    content,
    content = 'team_memories',
    content_rowid = 'row',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER team_memory_search_insert AFTER INSERT ON team_memories
BEGIN
    INSERT INTO team_memory_search (rowid, content) VALUES (new.row, new.content);
END;

CREATE TRIGGER team_memory_search_update AFTER UPDATE OF content ON team_memories
BEGIN
    INSERT INTO team_memory_search (team_memory_search, rowid, content)
        VALUES ('delete', old.row, old.content);
    INSERT INTO team_memory_search (rowid, content) VALUES (new.row, new.content);
END;

-- The change log, by the team store's version (one sequence for the whole team store).
CREATE TABLE team_memory_log (
    project_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    memory_id INTEGER NOT NULL,
    action TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    detail TEXT,
    actor TEXT,
    task TEXT,
    PRIMARY KEY (project_id, version)
) WITHOUT ROWID;

-- How far each project's cache has read the team store, and when it last did.
CREATE TABLE team_cursors (
    project_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    synced_ms INTEGER NOT NULL
) WITHOUT ROWID;

-- Writes waiting for the team store, oldest first. The write id travels with the write and
-- is recorded by the server, so a replay after a crash or a lost answer lands once.
CREATE TABLE team_outbox (
    seq INTEGER PRIMARY KEY,
    write_id TEXT NOT NULL UNIQUE,
    project_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('add', 'edit', 'archive', 'supersede')),
    memory_id INTEGER,
    other_id INTEGER,
    category TEXT,
    content TEXT,
    actor TEXT NOT NULL,
    permanent INTEGER NOT NULL DEFAULT 0,
    queued_ms INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT
);
