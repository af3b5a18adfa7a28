-- Team schema v1: a project's memories and their change log, shared by every proxy of a team.
--
-- Every change takes the project's advisory lock first (see writes.rs), so versions are
-- drawn in commit order within a project and a reader's cursor never skips a row that
-- commits late. The partial unique index is what makes two proxies writing the same fact at
-- once end with one memory, counted twice, not two.
CREATE SEQUENCE mc_version;

CREATE TABLE mc_memories (
    id            bigserial PRIMARY KEY,
    project_id    text      NOT NULL,
    category      text      NOT NULL,
    content       text      NOT NULL,
    content_key   text      NOT NULL,
    status        text      NOT NULL CHECK (status IN ('active', 'permanent', 'archived')),
    source        text      NOT NULL CHECK (source IN ('operator', 'agent', 'historian')),
    seen_count    bigint    NOT NULL DEFAULT 1 CHECK (seen_count >= 1),
    created_ms    bigint    NOT NULL,
    updated_ms    bigint    NOT NULL,
    superseded_by bigint    REFERENCES mc_memories (id),
    version       bigint    NOT NULL,
    -- Embeddings are L2-normalised float32 blobs, compared in the proxy.
    embedding     bytea,
    search        tsvector  GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED
);
CREATE UNIQUE INDEX mc_memories_live_key ON mc_memories (project_id, content_key)
    WHERE status <> 'archived';
CREATE INDEX mc_memories_project ON mc_memories (project_id, id);
CREATE INDEX mc_memories_search ON mc_memories USING gin (search);

CREATE TABLE mc_memory_log (
    version    bigint PRIMARY KEY,
    project_id text   NOT NULL,
    memory_id  bigint NOT NULL REFERENCES mc_memories (id),
    action     text   NOT NULL CHECK (action IN ('added', 'changed', 'superseded', 'archived')),
    at_ms      bigint NOT NULL,
    detail     text,
    actor      text,
    task       text
);
CREATE INDEX mc_memory_log_project ON mc_memory_log (project_id, version);

-- One row per applied write: replaying a queued write finds its id here and changes nothing.
CREATE TABLE mc_writes (
    write_id   text   PRIMARY KEY,
    project_id text   NOT NULL,
    memory_id  bigint,
    applied_ms bigint NOT NULL
);
