-- Schema v3: the call ledger, one row per upstream call the proxy makes, so `status` and the
-- dashboard can say what each call cost, how much of it the cache served, and why it busted.

-- session_id is NULL for a call refused before its session was resolved. When set, it names
-- a session the proxy has already upserted (sessions are never deleted), so the foreign key
-- never fails a ledger write for a real call; it only catches a call tied to a made-up id.
-- The CHECKs mirror the Rust field types, so every stored row reads back without overflow.
CREATE TABLE calls (
    id INTEGER PRIMARY KEY NOT NULL,
    session_id TEXT REFERENCES sessions(id),
    pass_seq INTEGER CHECK (pass_seq >= 0),
    started_ms INTEGER NOT NULL,
    route TEXT NOT NULL,
    model TEXT NOT NULL,
    pass_kind TEXT CHECK (pass_kind IN ('cache_hit', 'soft_bust', 'hard_fold')),
    bust_cause TEXT,
    status INTEGER NOT NULL CHECK (status BETWEEN 0 AND 65535),
    uncached_tokens INTEGER CHECK (uncached_tokens >= 0),
    cache_write_tokens INTEGER CHECK (cache_write_tokens >= 0),
    cache_read_tokens INTEGER CHECK (cache_read_tokens >= 0),
    output_tokens INTEGER CHECK (output_tokens >= 0),
    first_byte_ms INTEGER CHECK (first_byte_ms >= 0),
    total_ms INTEGER NOT NULL CHECK (total_ms >= 0),
    stop_reason TEXT,
    usable_window INTEGER CHECK (usable_window >= 0),
    overflow_retry INTEGER NOT NULL CHECK (overflow_retry IN (0, 1)),
    error TEXT
) STRICT;

-- `status` reads a session's calls newest first and aggregates them.
CREATE INDEX calls_by_session ON calls(session_id, started_ms);
