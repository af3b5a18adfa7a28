-- Schema v25: when a memory was last of use, so maintenance can retire what nothing needs.
--
-- A memory is used when a search returns it (the agent's `ctx_search`, the `search` command)
-- and restated when someone states the same fact again: the agent or the operator adding it
-- (merged by its key), or the historian finding it in a session again. Being shown in `m[0]`
-- is not use: every memory within the injection budget is shown on every fold, so counting
-- that would keep all of them alive forever.
ALTER TABLE memories ADD COLUMN retrievals INTEGER NOT NULL DEFAULT 0 CHECK (retrievals >= 0);
ALTER TABLE memories ADD COLUMN last_retrieved_ms INTEGER;
ALTER TABLE memories ADD COLUMN last_restated_ms INTEGER;

-- Nothing recorded retrievals before this version, so a memory stored earlier counts as used
-- when the recording began (the one time the store reads SQLite's clock): the first archive
-- run after an upgrade must not retire a fact the agent was finding yesterday. Rows stored
-- from now on leave it empty; their own times say when they were stored.
ALTER TABLE memories ADD COLUMN use_recorded_from_ms INTEGER;
UPDATE memories SET use_recorded_from_ms = CAST(unixepoch('subsec') * 1000 AS INTEGER);

-- The historian did record when it last saw each fact: those sightings are restatements.
UPDATE memories SET last_restated_ms = (
    SELECT MAX(f.last_ms) FROM historian_facts f
    WHERE f.scope = 'project:' || memories.project_id AND f.fact_key = memories.content_key
);
