-- The dreamer's maintenance of a team's memories (issue 34): its changes travel through the
-- team write queue like every other change of project knowledge, so the queue learns the
-- three maintenance kinds and what they carry: the task that made the change, its reason,
-- and the memories it read with the text it read (the server applies the change only while
-- each still says that). SQLite cannot widen a CHECK in place, so the table is rebuilt with
-- its rows and their order.
CREATE TABLE team_outbox_v27 (
    seq INTEGER PRIMARY KEY,
    write_id TEXT NOT NULL UNIQUE,
    project_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('add', 'edit', 'archive', 'supersede',
        'maintain_archive', 'maintain_rewrite', 'maintain_merge')),
    memory_id INTEGER,
    other_id INTEGER,
    category TEXT,
    content TEXT,
    actor TEXT NOT NULL,
    permanent INTEGER NOT NULL DEFAULT 0,
    queued_ms INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    task TEXT,
    detail TEXT,
    -- JSON array of [memory id, text as read], the changed (or kept) memory first.
    seen TEXT
);
INSERT INTO team_outbox_v27 (seq, write_id, project_id, kind, memory_id, other_id, category,
    content, actor, permanent, queued_ms, attempts, last_error)
SELECT seq, write_id, project_id, kind, memory_id, other_id, category, content, actor,
    permanent, queued_ms, attempts, last_error FROM team_outbox;
DROP TABLE team_outbox;
ALTER TABLE team_outbox_v27 RENAME TO team_outbox;

-- When a search on this machine last returned each cached team memory: the team's memories
-- are not rows of `memories`, so their use is kept beside the cache, keyed by the team id.
CREATE TABLE team_memory_use (
    project_id TEXT NOT NULL,
    id INTEGER NOT NULL,
    retrievals INTEGER NOT NULL DEFAULT 0,
    last_retrieved_ms INTEGER NOT NULL,
    PRIMARY KEY (project_id, id)
) WITHOUT ROWID;
