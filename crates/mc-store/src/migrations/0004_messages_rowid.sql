-- Schema v4: the raw log becomes a rowid table with the message content as its last column.
--
-- As a WITHOUT ROWID table the log kept each whole row in its primary-key b-tree. A message
-- larger than about 1 KB spills onto overflow pages, and every key comparison against such a
-- row (each lookup of a session's last message, each append) read the whole row back, content
-- included: the cost of a lookup grew with the size of the messages it passed. Now the key
-- index holds only (session_id, ordinal) and the row id; hash, chain and the other small
-- columns come before content, so reading them never walks the content's overflow pages.
-- Same columns, same rows, same constraints and triggers: nothing stored changes meaning.

DROP TRIGGER messages_are_append_only_update;
DROP TRIGGER messages_are_append_only_delete;

CREATE TABLE messages_v4 (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    ordinal INTEGER NOT NULL CHECK (ordinal >= 0),
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    hash BLOB NOT NULL CHECK (length(hash) = 32),
    chain BLOB NOT NULL CHECK (length(chain) = 32),
    created_ms INTEGER NOT NULL,
    content TEXT NOT NULL,
    PRIMARY KEY (session_id, ordinal)
) STRICT;

INSERT INTO messages_v4 (session_id, ordinal, role, hash, chain, created_ms, content)
SELECT session_id, ordinal, role, hash, chain, created_ms, content FROM messages
ORDER BY session_id, ordinal;

DROP TABLE messages;
ALTER TABLE messages_v4 RENAME TO messages;

-- "Which stored session does this request extend?" is one lookup of a chain link; the index
-- names the session and ordinal itself, so the lookup never reads a row.
CREATE INDEX messages_by_chain ON messages(chain, session_id, ordinal);

-- Nothing already stored is lost: the raw log refuses updates and deletes.
CREATE TRIGGER messages_are_append_only_update BEFORE UPDATE ON messages
BEGIN
    SELECT RAISE(ABORT, 'the raw message log is append-only');
END;

CREATE TRIGGER messages_are_append_only_delete BEFORE DELETE ON messages
BEGIN
    SELECT RAISE(ABORT, 'the raw message log is append-only');
END;
