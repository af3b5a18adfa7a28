-- Schema v13: the raw log's full-text index also holds, for each message, the start of the
-- message after it. A turn is found by the words of the answer it got, as v10 made it found
-- by the words of the question it answers: "what did we decide about retries" finds the
-- question whose reply says so, a command finds the call whose result names it.
--
-- The next message arrives after a message is indexed, so its row is rewritten then: the
-- index is contentless-delete (rows can be replaced). The index holds only postings derived
-- from the raw log, so it is dropped and rebuilt; the watermark goes back to 0 and every
-- message is indexed again when the store is next opened, in batches. No stored data changes.
DROP TABLE message_search;

CREATE VIRTUAL TABLE message_search USING fts5(
    body,
    context,
    next,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

UPDATE search_watermarks SET indexed_through = 0 WHERE name = 'messages';
