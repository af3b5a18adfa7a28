-- Team-wide use of a team's memories (issue 34): `archive_stale_memories` on one machine must
-- see that a colleague's agent found a memory yesterday, or it retires a fact in daily use.
--
-- `team_memory_use` now holds the use of each cached team memory as this machine knows it:
-- its own searches and restatements, and the team's as the last sync brought them (times
-- only move forwards). A restatement without a search leaves the search columns empty, so
-- the table is rebuilt with `last_retrieved_ms` nullable and a restatement time beside it.
CREATE TABLE team_memory_use_v28 (
    project_id TEXT NOT NULL,
    id INTEGER NOT NULL,
    retrievals INTEGER NOT NULL DEFAULT 0,
    last_retrieved_ms INTEGER,
    last_restated_ms INTEGER,
    PRIMARY KEY (project_id, id)
) WITHOUT ROWID;
INSERT INTO team_memory_use_v28 (project_id, id, retrievals, last_retrieved_ms)
SELECT project_id, id, retrievals, last_retrieved_ms FROM team_memory_use;
DROP TABLE team_memory_use;
ALTER TABLE team_memory_use_v28 RENAME TO team_memory_use;

-- This machine's use not yet sent to the team store, summed per memory. Rows with no write id
-- are still gathering; the sync seals a project's open rows under one fresh write id, sends
-- them as one batch, and deletes them when the server answered. A sealed batch is sent again
-- under the same id until it lands, and the server, having recorded the id, counts it once.
CREATE TABLE team_use_outbox (
    seq INTEGER PRIMARY KEY,
    write_id TEXT,
    project_id TEXT NOT NULL,
    id INTEGER NOT NULL,
    retrievals INTEGER NOT NULL DEFAULT 0,
    last_retrieved_ms INTEGER,
    last_restated_ms INTEGER
);
CREATE UNIQUE INDEX team_use_outbox_open ON team_use_outbox (project_id, id)
    WHERE write_id IS NULL;
CREATE INDEX team_use_outbox_sealed ON team_use_outbox (write_id) WHERE write_id IS NOT NULL;
