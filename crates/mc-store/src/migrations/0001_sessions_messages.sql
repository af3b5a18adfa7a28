-- Schema v1: sessions and their raw, append-only message log.

-- Which migrations ran, one row each; a second run of the same migration would violate the key.
CREATE TABLE schema_migrations (
    version INTEGER PRIMARY KEY NOT NULL,
    name TEXT NOT NULL
) STRICT;

-- A conversation as the proxy saw it. A fork (a rewind or an edited message) is a session of
-- its own whose first fork_ordinal messages are copies of its parent's.
CREATE TABLE sessions (
    id TEXT PRIMARY KEY NOT NULL,
    host TEXT NOT NULL,
    project TEXT,
    parent_id TEXT REFERENCES sessions(id),
    fork_ordinal INTEGER CHECK (fork_ordinal >= 0),
    created_ms INTEGER NOT NULL,
    last_seen_ms INTEGER NOT NULL,
    CHECK ((parent_id IS NULL) = (fork_ordinal IS NULL))
) STRICT;

CREATE INDEX sessions_by_last_seen ON sessions(last_seen_ms);
CREATE INDEX sessions_by_parent ON sessions(parent_id);

-- The raw log: every message exactly as received, in order. content is the JSON of the
-- message's mc_core parts; hash its content hash; chain the hash-chain link covering
-- messages 0..=ordinal of the session.
CREATE TABLE messages (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    ordinal INTEGER NOT NULL CHECK (ordinal >= 0),
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content TEXT NOT NULL,
    hash BLOB NOT NULL CHECK (length(hash) = 32),
    chain BLOB NOT NULL CHECK (length(chain) = 32),
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (session_id, ordinal)
) STRICT, WITHOUT ROWID;

-- "Which stored session does this request extend?" is one lookup of a chain link.
CREATE INDEX messages_by_chain ON messages(chain);

-- Nothing already stored is lost: the raw log refuses updates and deletes.
CREATE TRIGGER messages_are_append_only_update BEFORE UPDATE ON messages
BEGIN
    SELECT RAISE(ABORT, 'the raw message log is append-only');
END;

CREATE TRIGGER messages_are_append_only_delete BEFORE DELETE ON messages
BEGIN
    SELECT RAISE(ABORT, 'the raw message log is append-only');
END;
