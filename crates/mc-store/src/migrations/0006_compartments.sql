-- Schema v6: the historian's compartments. Each summarises a contiguous ordinal range of a
-- session's raw log; a session's compartments follow each other without gap or overlap from
-- ordinal 0, so the first ordinal not yet summarised is the last one's end plus one. The raw
-- log keeps every message they cover.
CREATE TABLE compartments (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    start_ordinal INTEGER NOT NULL CHECK (start_ordinal >= 0),
    end_ordinal INTEGER NOT NULL CHECK (end_ordinal >= start_ordinal),
    start_ms INTEGER NOT NULL,
    end_ms INTEGER NOT NULL,
    title TEXT NOT NULL,
    importance INTEGER NOT NULL CHECK (importance BETWEEN 1 AND 100),
    episode TEXT NOT NULL,
    tier_full TEXT NOT NULL,
    tier_condensed TEXT NOT NULL,
    tier_paragraph TEXT NOT NULL,
    tier_line TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (session_id, start_ordinal)
) STRICT, WITHOUT ROWID;
