-- Team-wide use of a team's memories, and a team's smart notes (issue 34).
--
-- `archive_stale_memories` on one machine must see that a colleague's agent found a memory
-- yesterday, or it retires a fact in daily use.
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

-- A team's smart notes (team schema v4) are cached in `notes` itself: every reader of notes
-- reads them as before, with local ids that never collide with this machine's session notes.
-- `team_origin` names the team note a row caches (the write id of its add); a row without one
-- is this machine's own.
ALTER TABLE notes ADD COLUMN team_origin TEXT;
CREATE UNIQUE INDEX notes_by_team_origin ON notes (team_origin) WHERE team_origin IS NOT NULL;

-- Changes to team notes waiting for the team store, oldest first, sent by the sync like the
-- memory writes of `team_outbox` and applied once by their write id.
CREATE TABLE team_note_outbox (
    seq INTEGER PRIMARY KEY,
    write_id TEXT NOT NULL UNIQUE,
    project_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('add', 'update', 'surface', 'dismiss')),
    origin TEXT,
    content TEXT,
    surface_condition TEXT,
    queued_ms INTEGER NOT NULL
);
