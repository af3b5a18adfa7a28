//! Keeping the raw log's full-text index current.
//!
//! The stored content is JSON of parts, which SQL cannot turn into words the way search needs
//! (tool results nested in parts, string arguments inside tool calls), so the words are
//! extracted here, in Rust, by [`mc_core::search::indexed_text`]. A watermark records the last
//! row id indexed. Indexing is not part of the transaction that stores messages: a pass
//! stores a request's new messages on the request path, and tokenising them for FTS5 (with the
//! row before rewritten to name its successor) was a quarter of a pass's CPU. So the rows
//! above the watermark are indexed after their commit, in transactions of their own: by the
//! proxy in the background after each call ([`Store::index_pending_batch`]), and by every
//! search before it reads ([`Store::index_pending_messages`]), so a search still sees every
//! stored message. A crash between the two loses nothing: the rows are stored, and the next
//! catch-up (at the latest when the store is opened) indexes them.

use mc_core::search::indexed_text;
use mc_core::{Message, Part, Role};

use crate::error::{Result, StoreError};
use crate::store::{ReadTx, Store, WriteTx};

/// Rows indexed per statement batch when catching up a backlog.
const BATCH: u32 = 2_000;

const DOING: &str = "indexing messages for search";

/// Characters of the messages before and after indexed beside a message: their gist (a
/// question, a command, the start of an answer), not a second copy of a long output.
pub(crate) const CONTEXT_CHARS: usize = 600;

impl ReadTx<'_> {
    /// Whether messages were stored since the watermark.
    fn messages_pending_index(&self) -> Result<bool> {
        self.conn()
            .prepare_cached(
                "SELECT (SELECT coalesce(max(rowid), 0) FROM messages) > indexed_through
                 FROM search_watermarks WHERE name = 'messages'",
            )
            .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
            .map_err(StoreError::sqlite(DOING))
    }
}

impl WriteTx<'_> {
    /// Indexes every message stored since the watermark; returns how many rows were indexed
    /// (at most `limit`). Each row holds the message's words, the start of the message before
    /// it and the start of the message after it; a message indexed before its successor
    /// arrived has its row rewritten with it. Rows that do not decode (a corrupt row is
    /// reported where it is read) are indexed as empty, so one bad row never stops the index.
    pub(crate) fn index_new_messages(&self, limit: i64) -> Result<u64> {
        let conn = self.conn();
        let watermark: i64 = conn
            .prepare_cached("SELECT indexed_through FROM search_watermarks WHERE name = 'messages'")
            .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
            .map_err(StoreError::sqlite(DOING))?;
        let mut select = conn
            .prepare_cached(
                "SELECT m.rowid, m.role, m.content, p.rowid, p.role, p.content, n.role, n.content,
                        b.role, b.content
                 FROM messages m
                 LEFT JOIN messages p ON p.session_id = m.session_id AND p.ordinal = m.ordinal - 1
                 LEFT JOIN messages n ON n.session_id = m.session_id AND n.ordinal = m.ordinal + 1
                 LEFT JOIN messages b ON b.session_id = m.session_id AND b.ordinal = m.ordinal - 2
                 WHERE m.rowid > ?1 ORDER BY m.rowid LIMIT ?2",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let rows = select
            .query_map((watermark, limit), |row| {
                Ok(NewRow {
                    rowid: row.get(0)?,
                    message: (row.get(1)?, row.get(2)?),
                    before_rowid: row.get(3)?,
                    before: pair(row.get(4)?, row.get(5)?),
                    after: pair(row.get(6)?, row.get(7)?),
                    two_before: pair(row.get(8)?, row.get(9)?),
                })
            })
            .map_err(StoreError::sqlite(DOING))?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(StoreError::sqlite(DOING))?;
        let Some(last) = rows.last().map(|row| row.rowid) else {
            return Ok(0);
        };
        let mut delete = conn
            .prepare_cached("DELETE FROM message_search WHERE rowid = ?1")
            .map_err(StoreError::sqlite(DOING))?;
        let mut insert = conn
            .prepare_cached(
                "INSERT INTO message_search (rowid, body, context, next) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(StoreError::sqlite(DOING))?;
        for row in &rows {
            let (role, content) = &row.message;
            let words = words_of(role, content);
            // The message before is decoded once: its start is this row's context, and all of
            // it the body of its own row when that is rewritten below.
            let before_words = row
                .before
                .as_ref()
                .map(|(role, content)| words_of(role, content));
            insert
                .execute((
                    row.rowid,
                    &words,
                    before_words
                        .as_deref()
                        .map_or_else(String::new, |text| clip(text, CONTEXT_CHARS)),
                    gist(row.after.as_ref()),
                ))
                .map_err(StoreError::sqlite(DOING))?;
            // The message before was indexed without this one as its successor: rewrite it.
            if let (Some(before_rowid), Some(before_words)) = (row.before_rowid, before_words)
                && before_rowid <= watermark
            {
                delete
                    .execute([before_rowid])
                    .map_err(StoreError::sqlite(DOING))?;
                insert
                    .execute((
                        before_rowid,
                        before_words,
                        gist(row.two_before.as_ref()),
                        clip(&words, CONTEXT_CHARS),
                    ))
                    .map_err(StoreError::sqlite(DOING))?;
            }
        }
        conn.prepare_cached(
            "UPDATE search_watermarks SET indexed_through = ?1 WHERE name = 'messages'",
        )
        .and_then(|mut statement| statement.execute([last]))
        .map_err(StoreError::sqlite(DOING))?;
        Ok(rows.len() as u64)
    }
}

impl Store {
    /// Indexes every message stored since the watermark, one batch per transaction so a
    /// large backlog (a store from before search, a fork's copied log) never holds the write
    /// lock for long; returns how many rows were indexed. Every search calls this first.
    pub fn index_pending_messages(&self) -> Result<u64> {
        // A read first: a search over a current index takes no write lock.
        if !self.read(|tx| tx.messages_pending_index())? {
            return Ok(0);
        }
        let mut total = 0;
        loop {
            let indexed = self.index_pending_batch(BATCH)?;
            total += indexed;
            if indexed == 0 {
                return Ok(total);
            }
        }
    }

    /// Indexes at most `limit` messages stored since the watermark, in one transaction;
    /// returns how many (0 when the index is current). For a background task that lets
    /// other writes in between batches.
    pub fn index_pending_batch(&self, limit: u32) -> Result<u64> {
        self.write(|tx| tx.index_new_messages(i64::from(limit)))
    }
}

/// A message to index, with its neighbours in its session (role and content each).
struct NewRow {
    rowid: i64,
    message: (String, String),
    before_rowid: Option<i64>,
    before: Option<(String, String)>,
    after: Option<(String, String)>,
    two_before: Option<(String, String)>,
}

fn pair(role: Option<String>, content: Option<String>) -> Option<(String, String)> {
    role.zip(content)
}

/// The start of a neighbouring message's words, or nothing when there is none.
fn gist(message: Option<&(String, String)>) -> String {
    message.map_or_else(String::new, |(role, content)| {
        clip(&words_of(role, content), CONTEXT_CHARS)
    })
}

pub(crate) fn words_of(role: &str, content: &str) -> String {
    let Some(role) = Role::from_name(role) else {
        return String::new();
    };
    match serde_json::from_str::<Vec<Part>>(content) {
        Ok(parts) => indexed_text(&Message::new(role, parts)),
        Err(_) => String::new(),
    }
}

/// The first `chars` characters of `text`.
pub(crate) fn clip(text: &str, chars: usize) -> String {
    text.chars().take(chars).collect()
}
