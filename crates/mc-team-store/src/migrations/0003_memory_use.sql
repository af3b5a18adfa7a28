-- Team schema v3: the team's use of its memories, so `archive_stale_memories` on one machine
-- sees that a colleague's agent found or restated a memory yesterday.
--
-- One row per used memory: the searches that returned it, summed over every proxy, and the
-- latest time one did or its fact was stated again (times only move forwards). Each change
-- takes the project's advisory lock and a version from `mc_version` like every other change,
-- so a proxy follows use by the same cursor as memories and their log.
CREATE TABLE mc_memory_use (
    project_id        text   NOT NULL,
    memory_id         bigint NOT NULL REFERENCES mc_memories (id),
    retrievals        bigint NOT NULL DEFAULT 0 CHECK (retrievals >= 0),
    last_retrieved_ms bigint,
    last_restated_ms  bigint,
    version           bigint NOT NULL,
    PRIMARY KEY (project_id, memory_id)
);
CREATE INDEX mc_memory_use_version ON mc_memory_use (project_id, version);
