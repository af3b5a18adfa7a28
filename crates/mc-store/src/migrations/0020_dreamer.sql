-- Schema v20: the dreamer's lease and runs, and which task made a memory change.
--
-- Memory-changing maintenance tasks share one conflict domain per project; whoever runs one
-- holds that domain's lease row, naming itself and when the lease lapses. Two proxies on one
-- store take the lease in a write transaction, so at most one holds a domain at a time, and a
-- proxy killed mid-run stops renewing, so its lease expires and the next one takes over.
CREATE TABLE dreamer_leases (
    domain      TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    acquired_ms INTEGER NOT NULL,
    expires_ms  INTEGER NOT NULL
) STRICT;

-- Every run of a task on a project, whatever its outcome, so `status` and `dream --list` can
-- say what the dreamer did, what it cost at list price and why a failing task stopped.
CREATE TABLE dreamer_runs (
    id             INTEGER PRIMARY KEY,
    task           TEXT NOT NULL,
    project_id     TEXT NOT NULL,
    started_ms     INTEGER NOT NULL,
    finished_ms    INTEGER NOT NULL,
    outcome        TEXT NOT NULL CHECK (outcome IN ('done', 'failed', 'skipped')),
    model          TEXT,
    model_calls    INTEGER NOT NULL CHECK (model_calls >= 0),
    input_tokens   INTEGER NOT NULL CHECK (input_tokens >= 0),
    output_tokens  INTEGER NOT NULL CHECK (output_tokens >= 0),
    cost_usd       REAL NOT NULL CHECK (cost_usd >= 0),
    changes        INTEGER NOT NULL CHECK (changes >= 0),
    failure_class  TEXT,
    provider_error TEXT,
    detail         TEXT
) STRICT;

CREATE INDEX dreamer_runs_by_task ON dreamer_runs (project_id, task, id);
CREATE INDEX dreamer_runs_by_start ON dreamer_runs (started_ms);

-- The memory log learns a fourth actor, the dreamer, and the task behind each change, so the
-- head's delta shows a maintenance change like any other and `memory log` can say why. SQLite
-- cannot widen a CHECK in place: the table is rebuilt with its rows and ids as they were.
CREATE TABLE memory_log_v20 (
    id INTEGER PRIMARY KEY,
    project_id TEXT NOT NULL,
    memory_id INTEGER NOT NULL REFERENCES memories(id),
    action TEXT NOT NULL CHECK (action IN ('added', 'changed', 'superseded', 'archived')),
    at_ms INTEGER NOT NULL,
    detail TEXT,
    actor TEXT CHECK (actor IS NULL OR actor IN ('operator', 'agent', 'historian', 'dreamer')),
    task TEXT
) STRICT;

INSERT INTO memory_log_v20 (id, project_id, memory_id, action, at_ms, detail, actor)
    SELECT id, project_id, memory_id, action, at_ms, detail, actor FROM memory_log;

DROP TABLE memory_log;
ALTER TABLE memory_log_v20 RENAME TO memory_log;
CREATE INDEX memory_log_by_project ON memory_log (project_id, id);
