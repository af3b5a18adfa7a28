-- Schema v7: what the historian publishes beside its compartments, and its runs.
--
-- A compartment keeps the user's own messages of its range verbatim (JSON array of
-- {"ordinal", "text"}). Facts and user observations are stored per scope (the project, or
-- `session:<id>` without one) and merged by a normalised key, counting how often they were
-- seen; project memory promotes them later. Every run, published or not, leaves one row so
-- `status` can say what the historian did and what it cost.
ALTER TABLE compartments ADD COLUMN quotes TEXT NOT NULL DEFAULT '[]';

CREATE TABLE historian_facts (
    scope TEXT NOT NULL,
    fact_key TEXT NOT NULL,
    category TEXT NOT NULL,
    content TEXT NOT NULL,
    seen_count INTEGER NOT NULL CHECK (seen_count >= 1),
    first_session TEXT NOT NULL,
    first_ms INTEGER NOT NULL,
    last_ms INTEGER NOT NULL,
    PRIMARY KEY (scope, fact_key)
) STRICT;

CREATE TABLE user_observations (
    scope TEXT NOT NULL,
    observation_key TEXT NOT NULL,
    text TEXT NOT NULL,
    seen_count INTEGER NOT NULL CHECK (seen_count >= 1),
    first_ms INTEGER NOT NULL,
    last_ms INTEGER NOT NULL,
    PRIMARY KEY (scope, observation_key)
) STRICT;

CREATE TABLE historian_runs (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    started_ms INTEGER NOT NULL,
    finished_ms INTEGER NOT NULL,
    chunk_start INTEGER NOT NULL,
    chunk_end INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    model TEXT,
    calls INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    compartments INTEGER NOT NULL,
    detail TEXT
) STRICT;

CREATE INDEX historian_runs_by_session ON historian_runs (session_id, started_ms);
