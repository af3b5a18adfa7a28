-- Schema v10: full-text search over the raw log, compartments and memories; who made each
-- memory change.

-- The operator, the agent or the historian; NULL in rows logged before v10.
ALTER TABLE memory_log ADD COLUMN actor TEXT
    CHECK (actor IS NULL OR actor IN ('operator', 'agent', 'historian'));

--
-- All three use the porter stemmer over unicode61 words, so "painted" finds "paint".
--
-- message_search indexes the words of each raw message (texts, tool calls' string arguments,
-- tool results; extracted in Rust, since the stored content is JSON of parts), and as its
-- context the start of the message before it: an answer is found by the words of the
-- question it answers, a tool result by the command that produced it. It is
-- contentless, keyed by the messages row id: the raw log already holds the text, so the index
-- adds only its postings. Messages are indexed in the transaction that appends them, up to the
-- watermark below, so the index never lags the log; rows stored before this version are
-- indexed when the store is next opened.
CREATE VIRTUAL TABLE message_search USING fts5(
    body,
    context,
    content = '',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TABLE search_watermarks (
    name TEXT PRIMARY KEY NOT NULL,
    indexed_through INTEGER NOT NULL
) STRICT;

INSERT INTO search_watermarks (name, indexed_through) VALUES ('messages', 0);

-- Compartments have no row id (WITHOUT ROWID), so their index keeps its own copy of the text
-- with the compartment's key; triggers keep it in step with appends and rebuild swaps.
CREATE VIRTUAL TABLE compartment_search USING fts5(
    title,
    body,
    session_id UNINDEXED,
    start_ordinal UNINDEXED,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

INSERT INTO compartment_search (title, body, session_id, start_ordinal)
SELECT title, tier_full, session_id, start_ordinal FROM compartments;

CREATE TRIGGER compartment_search_insert AFTER INSERT ON compartments
BEGIN
    INSERT INTO compartment_search (title, body, session_id, start_ordinal)
    VALUES (new.title, new.tier_full, new.session_id, new.start_ordinal);
END;

CREATE TRIGGER compartment_search_delete AFTER DELETE ON compartments
BEGIN
    DELETE FROM compartment_search
    WHERE session_id = old.session_id AND start_ordinal = old.start_ordinal;
END;

-- Memories index their content through the memories table itself (external content).
CREATE VIRTUAL TABLE memory_search USING fts5(
    content,
    content = 'memories',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

INSERT INTO memory_search (rowid, content) SELECT id, content FROM memories;

CREATE TRIGGER memory_search_insert AFTER INSERT ON memories
BEGIN
    INSERT INTO memory_search (rowid, content) VALUES (new.id, new.content);
END;

CREATE TRIGGER memory_search_update AFTER UPDATE OF content ON memories
BEGIN
    INSERT INTO memory_search (memory_search, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO memory_search (rowid, content) VALUES (new.id, new.content);
END;

CREATE TRIGGER memory_search_delete AFTER DELETE ON memories
BEGIN
    INSERT INTO memory_search (memory_search, rowid, content) VALUES ('delete', old.id, old.content);
END;

-- Embedding vectors for semantic search: one per item (a message by its row id, a memory by
-- its id, a compartment by `session_id:start_ordinal`), of the model named beside it (a row
-- of another model is stale and is embedded again), with the key of the text it embeds (a
-- memory or compartment whose text changed is embedded again). Float32, little-endian,
-- L2-normalised. Where the item lives (project, session, ordinal, time, a message's content
-- hash) is copied beside it, so a scan filters by scope without joining.
CREATE TABLE vectors (
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL CHECK (source IN ('message', 'memory', 'compartment')),
    item TEXT NOT NULL,
    model TEXT NOT NULL,
    text_key TEXT NOT NULL,
    vector BLOB NOT NULL,
    project TEXT,
    session_id TEXT,
    ordinal INTEGER,
    at_ms INTEGER NOT NULL,
    hash BLOB,
    UNIQUE (source, item)
) STRICT;

-- How far through the raw log each model has embedded (by messages row id).
CREATE TABLE vector_watermarks (
    model TEXT PRIMARY KEY NOT NULL,
    messages_through INTEGER NOT NULL
) STRICT;

-- Git commits of each project's HEAD history (the last year, capped), searchable by their
-- message, so "when did we change the retry policy" finds the commit.
CREATE TABLE commits (
    id INTEGER PRIMARY KEY,
    project_id TEXT NOT NULL,
    sha TEXT NOT NULL,
    author TEXT NOT NULL,
    committed_ms INTEGER NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (project_id, sha)
) STRICT;

CREATE VIRTUAL TABLE commit_search USING fts5(
    subject,
    body,
    content = 'commits',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER commit_search_insert AFTER INSERT ON commits
BEGIN
    INSERT INTO commit_search (rowid, subject, body) VALUES (new.id, new.subject, new.body);
END;
