-- Schema v9: project memory and its change log.
--
-- A memory is a fact of one project in one of the five categories, written by the operator,
-- the agent or promoted from the historian's facts. Restatements share a normalised key
-- (`fact_key`): two live memories of a project never share one, so a repeat is counted
-- (`seen_count`) instead of stored twice. Archived rows leave that rule, so a fact can be
-- archived and later stated again. A superseded memory is archived and names its successor.
--
-- Every change is one `memory_log` row written in the same transaction, so the head's delta
-- (`m[1]`) can show what changed since it was last built by reading the log past an id.
CREATE TABLE memories (
    id INTEGER PRIMARY KEY,
    project_id TEXT NOT NULL,
    category TEXT NOT NULL CHECK (category IN
        ('PROJECT_RULES', 'ARCHITECTURE', 'CONSTRAINTS', 'CONFIG_VALUES', 'NAMING')),
    content TEXT NOT NULL,
    content_key TEXT NOT NULL CHECK (content_key <> ''),
    status TEXT NOT NULL CHECK (status IN ('active', 'permanent', 'archived')),
    seen_count INTEGER NOT NULL CHECK (seen_count >= 1),
    source TEXT NOT NULL CHECK (source IN ('operator', 'agent', 'historian')),
    superseded_by INTEGER REFERENCES memories(id),
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL
) STRICT;

CREATE UNIQUE INDEX memories_live_key ON memories (project_id, content_key)
    WHERE status <> 'archived';
CREATE INDEX memories_by_project ON memories (project_id, status, id);

CREATE TABLE memory_log (
    id INTEGER PRIMARY KEY,
    project_id TEXT NOT NULL,
    memory_id INTEGER NOT NULL REFERENCES memories(id),
    action TEXT NOT NULL CHECK (action IN ('added', 'changed', 'superseded', 'archived')),
    at_ms INTEGER NOT NULL,
    detail TEXT
) STRICT;

CREATE INDEX memory_log_by_project ON memory_log (project_id, id);
