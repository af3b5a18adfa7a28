-- Schema v2: what the transform engine decided, so every pass replays identically after a
-- restart: tag numbers, queued and landed drops, the rendered head, and one row per pass.

-- The tag of each taggable unit (a text part or tool result) of the raw log. Assigned once at
-- ingest; the same unit keeps its number for the life of the session.
CREATE TABLE tags (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    tag INTEGER NOT NULL CHECK (tag >= 1),
    ordinal INTEGER NOT NULL CHECK (ordinal >= 0),
    part INTEGER NOT NULL CHECK (part >= 0),
    PRIMARY KEY (session_id, tag),
    UNIQUE (session_id, ordinal, part)
) STRICT, WITHOUT ROWID;

-- Drops: queued by ctx_reduce, an operator or a reclaim lane; landed on a busting pass, after
-- which every render replays them. A landed drop never goes back to queued.
CREATE TABLE drops (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    tag INTEGER NOT NULL,
    source TEXT NOT NULL,
    queued_ms INTEGER NOT NULL,
    landed_pass INTEGER,
    PRIMARY KEY (session_id, tag),
    FOREIGN KEY (session_id, tag) REFERENCES tags(session_id, tag)
) STRICT, WITHOUT ROWID;

-- The engine's per-session state: the head as last materialised and what the last call
-- reported. One row per session, replaced by each pass that changes it.
CREATE TABLE engine_state (
    session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions(id),
    state TEXT NOT NULL
) STRICT;

-- One row per pass: its kind and cause, for the ledger and for `status`.
CREATE TABLE passes (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL CHECK (seq >= 0),
    at_ms INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('cache_hit', 'soft_bust', 'hard_fold')),
    cause TEXT,
    tokens_removed INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, seq)
) STRICT, WITHOUT ROWID;
