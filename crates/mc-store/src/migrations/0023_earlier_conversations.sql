-- Schema v23: what a session carries from the conversation its client compacted away.
--
-- When a client compacts by itself and goes on with a new conversation that opens with its
-- summary, the new session's `m[0]` shows what the earlier session held (its task, history
-- and the user's words), rendered once when the new session starts and kept here, so every
-- later fold shows the same bytes. `earlier_session` is not a foreign key: the earlier
-- session is pruned by its own activity, and the carried text outlives it.
CREATE TABLE earlier_conversations (
    session_id TEXT NOT NULL PRIMARY KEY REFERENCES sessions(id),
    earlier_session TEXT NOT NULL,
    text TEXT NOT NULL,
    created_ms INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
