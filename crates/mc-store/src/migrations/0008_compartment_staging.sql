-- Schema v8: the staging area of a rebuild (`magic-context recomp`).
--
-- A rebuild summarises a session's raw log again from ordinal 0, run after run, into these
-- rows; the session's compartments stay as they are, rendered as before, until the staged
-- ones reach where they end. Then the staged set replaces them in one transaction and this
-- table is emptied for the session. A rebuild that stops half-way (a failed run, Ctrl-C)
-- leaves its rows here and resumes from their end. Same columns as `compartments`, so the
-- swap copies rows unchanged.
CREATE TABLE staged_compartments (
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
    quotes TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (session_id, start_ordinal)
) STRICT, WITHOUT ROWID;
