-- Schema v21: a whole session can be pruned.
--
-- The raw log stays append-only for everything but retention: `magic-context prune` (and
-- `serve`'s daily run of it) removes every row of a session whose last activity is older
-- than the configured days, messages included. The prune names the session here first, in
-- the same transaction, and takes it out again before committing, so this table is empty
-- outside a prune and no other write can remove or change a stored message.
CREATE TABLE sessions_being_pruned (
    session_id TEXT PRIMARY KEY NOT NULL
) STRICT;

DROP TRIGGER messages_are_append_only_delete;

CREATE TRIGGER messages_are_append_only_delete BEFORE DELETE ON messages
WHEN old.session_id NOT IN (SELECT session_id FROM sessions_being_pruned)
BEGIN
    SELECT RAISE(ABORT, 'the raw message log is append-only; only pruning its whole session removes a message');
END;
