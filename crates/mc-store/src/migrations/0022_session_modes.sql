-- Schema v22: what kind of session each one is, and the session a subagent was spawned from.
--
-- `mode` is how the engine last treated the session: `primary` (every session stored
-- before this version), `subagent` (spawned by a host for one task: no historian, no
-- compartment history in its head) or `compaction_off` (the config left the window to the
-- host). `spawned_by` names the primary session a subagent works for; it is not a foreign
-- key, because the two are pruned by their own activity and a subagent outliving its
-- parent's row still names it for `status`. A fork's `parent_id` is another relation: the
-- session a rewind branched from.
ALTER TABLE sessions ADD COLUMN mode TEXT NOT NULL DEFAULT 'primary'
    CHECK (mode IN ('primary', 'subagent', 'compaction_off'));

ALTER TABLE sessions ADD COLUMN spawned_by TEXT;
