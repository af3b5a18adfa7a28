//! The raw message log: every message of every session, append-only, with its content hash
//! and hash-chain link.
//!
//! Ordinals run 0, 1, 2, … per session with no gaps, and stored rows are never updated or
//! deleted (triggers in the schema refuse both). Link `i` commits to messages `0..=i`, so the
//! session a request extends is found with one indexed lookup of a link.

use std::ops::{Bound, RangeBounds};

use mc_core::{ContentHash, HashChain, Message, Part, Role, SessionId};
use rusqlite::{OptionalExtension, Row};

use crate::error::{Result, RowProblem, StoreError};
use crate::store::{ReadTx, WriteTx};

/// A message read back from the log.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    /// Its position in the session, from 0.
    pub ordinal: u64,
    /// The message as it was written.
    pub message: Message,
    /// Its content hash.
    pub hash: ContentHash,
    /// The hash-chain link covering this message and all before it.
    pub chain: ContentHash,
    /// When it was stored, unix milliseconds.
    pub created_ms: i64,
}

/// Where a chain link was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainMatch {
    /// The session holding the link.
    pub session: SessionId,
    /// The ordinal of the message the link ends at: the match covers `0..=ordinal`.
    pub ordinal: u64,
}

/// A message row as SQLite returns it, before validation.
pub(crate) struct MessageRow {
    ordinal: u64,
    role: String,
    content: String,
    hash: Vec<u8>,
    chain: Vec<u8>,
    created_ms: i64,
}

impl MessageRow {
    /// Reads the columns `ordinal, role, content, hash, chain, created_ms`, in that order.
    pub(crate) fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            ordinal: row.get(0)?,
            role: row.get(1)?,
            content: row.get(2)?,
            hash: row.get(3)?,
            chain: row.get(4)?,
            created_ms: row.get(5)?,
        })
    }

    /// Validates the row; the content must still hash to the stored hash, so a row changed
    /// behind our back is reported instead of silently feeding a wrong conversation upstream.
    pub(crate) fn decode(self, session: &SessionId) -> Result<StoredMessage> {
        let corrupt = |problem| StoreError::CorruptRow {
            session: session.clone(),
            ordinal: self.ordinal,
            problem,
        };
        let role = Role::from_name(&self.role)
            .ok_or_else(|| corrupt(RowProblem::Role(self.role.clone())))?;
        let parts: Vec<Part> =
            serde_json::from_str(&self.content).map_err(|err| corrupt(RowProblem::Json(err)))?;
        let hash = hash_from_column("hash", &self.hash).map_err(corrupt)?;
        let chain = hash_from_column("chain", &self.chain).map_err(corrupt)?;
        let message = Message::new(role, parts);
        if message.content_hash() != hash {
            return Err(corrupt(RowProblem::HashMismatch));
        }
        Ok(StoredMessage {
            ordinal: self.ordinal,
            message,
            hash,
            chain,
            created_ms: self.created_ms,
        })
    }
}

pub(crate) fn hash_from_column(
    column: &'static str,
    bytes: &[u8],
) -> std::result::Result<ContentHash, RowProblem> {
    <[u8; 32]>::try_from(bytes)
        .map(ContentHash::from_bytes)
        .map_err(|_| RowProblem::HashLength {
            column,
            len: bytes.len(),
        })
}

/// `[start, end)` of a range of ordinals, clamped to what SQLite's signed integers hold.
fn ordinal_bounds(range: &impl RangeBounds<u64>) -> (i64, i64) {
    let clamp = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
    let start = match range.start_bound() {
        Bound::Included(&start) => clamp(start),
        Bound::Excluded(&start) => clamp(start.saturating_add(1)),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&end) => clamp(end.saturating_add(1)),
        Bound::Excluded(&end) => clamp(end),
        Bound::Unbounded => i64::MAX,
    };
    (start, end)
}

impl WriteTx<'_> {
    /// Appends `messages` to a session's log starting at `first_ordinal`, which must equal the
    /// number already stored ([`StoreError::OrdinalGap`] otherwise: the log has no holes and
    /// nothing is overwritten). Hashes and chain links are computed here, continuing from the
    /// last stored link. Returns the session's new message count.
    ///
    /// The session must exist ([`upsert_session`](WriteTx::upsert_session)); appending does
    /// not touch its `last_seen_ms`.
    pub fn append_messages(
        &self,
        session: &SessionId,
        first_ordinal: u64,
        messages: &[Message],
        now_ms: i64,
    ) -> Result<u64> {
        self.require_session(session)?;
        let (count, mut previous) = match self.last_link(session)? {
            Some((ordinal, link)) => (ordinal + 1, Some(link)),
            None => (0, None),
        };
        if first_ordinal != count {
            return Err(StoreError::OrdinalGap {
                session: session.clone(),
                expected: count,
                got: first_ordinal,
            });
        }
        let mut insert = self
            .conn()
            .prepare_cached(
                "INSERT INTO messages (session_id, ordinal, role, content, hash, chain, created_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .map_err(StoreError::sqlite("appending messages"))?;
        let mut ordinal = count;
        for message in messages {
            let content =
                serde_json::to_string(&message.parts).map_err(|source| StoreError::Encode {
                    session: session.clone(),
                    ordinal,
                    source,
                })?;
            let hash = message.content_hash();
            let link = HashChain::next_link(previous.as_ref(), &hash);
            insert
                .execute((
                    session.as_str(),
                    ordinal,
                    message.role.as_str(),
                    content,
                    hash.as_bytes(),
                    link.as_bytes(),
                    now_ms,
                ))
                .map_err(StoreError::sqlite("appending messages"))?;
            previous = Some(link);
            ordinal += 1;
        }
        Ok(ordinal)
    }
}

/// Where a session's log ends: what a request must extend to continue it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogEnd {
    /// How many messages the log holds.
    pub count: u64,
    /// The chain link of its last message, `None` when it holds none.
    pub head: Option<ContentHash>,
}

impl ReadTx<'_> {
    /// How many messages a session has stored (0 for an unknown session).
    pub fn message_count(&self, session: &SessionId) -> Result<u64> {
        Ok(self.log_end(session)?.count)
    }

    /// The chain link of the session's last message: the identity of the whole conversation.
    pub fn chain_head(&self, session: &SessionId) -> Result<Option<ContentHash>> {
        Ok(self.log_end(session)?.head)
    }

    /// The session's message count and chain head in one lookup (an empty log for an unknown
    /// session); a pass needs both, and each costs a walk to the log's last row.
    pub fn log_end(&self, session: &SessionId) -> Result<LogEnd> {
        Ok(self
            .last_link(session)?
            .map_or_else(LogEnd::default, |(ordinal, link)| LogEnd {
                count: ordinal + 1,
                head: Some(link),
            }))
    }

    /// A session's messages whose ordinals fall in `range`, in order (none for an unknown
    /// session).
    pub fn messages(
        &self,
        session: &SessionId,
        range: impl RangeBounds<u64>,
    ) -> Result<Vec<StoredMessage>> {
        let (start, end) = ordinal_bounds(&range);
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT ordinal, role, content, hash, chain, created_ms FROM messages
                 WHERE session_id = ?1 AND ordinal >= ?2 AND ordinal < ?3 ORDER BY ordinal",
            )
            .map_err(StoreError::sqlite("reading messages"))?;
        let rows = statement
            .query_map((session.as_str(), start, end), MessageRow::from_row)
            .map_err(StoreError::sqlite("reading messages"))?;
        rows.map(|row| {
            row.map_err(StoreError::sqlite("reading messages"))?
                .decode(session)
        })
        .collect()
    }

    /// Finds a stored conversation containing `link`: the session whose messages
    /// `0..=ordinal` are exactly those the link commits to.
    ///
    /// Forks share their parent's links, so several sessions can match. Preferred is one whose
    /// *last* message the link ends at (the request continues it as is), then the most
    /// recently seen, then the smallest id, so the answer is deterministic.
    pub fn find_by_chain(&self, link: &ContentHash) -> Result<Option<ChainMatch>> {
        let found: Option<(String, u64)> = self
            .conn()
            .prepare_cached(
                "SELECT m.session_id, m.ordinal
                 FROM messages AS m JOIN sessions AS s ON s.id = m.session_id
                 WHERE m.chain = ?1
                 ORDER BY NOT EXISTS (
                     SELECT 1 FROM messages AS n
                     WHERE n.session_id = m.session_id AND n.ordinal = m.ordinal + 1
                 ) DESC, s.last_seen_ms DESC, m.session_id
                 LIMIT 1",
            )
            .and_then(|mut statement| {
                statement
                    .query_row([link.as_bytes()], |row| Ok((row.get(0)?, row.get(1)?)))
                    .optional()
            })
            .map_err(StoreError::sqlite("looking up a chain link"))?;
        found
            .map(|(id, ordinal)| {
                SessionId::new(id.as_str())
                    .map(|session| ChainMatch { session, ordinal })
                    .map_err(|err| StoreError::CorruptSession {
                        id,
                        problem: RowProblem::Id(err),
                    })
            })
            .transpose()
    }

    /// The last stored ordinal and its link.
    fn last_link(&self, session: &SessionId) -> Result<Option<(u64, ContentHash)>> {
        let row: Option<(u64, Vec<u8>)> = self
            .conn()
            .prepare_cached(
                "SELECT ordinal, chain FROM messages WHERE session_id = ?1
                 ORDER BY ordinal DESC LIMIT 1",
            )
            .and_then(|mut statement| {
                statement
                    .query_row([session.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))
                    .optional()
            })
            .map_err(StoreError::sqlite("reading the last message"))?;
        row.map(|(ordinal, chain)| {
            hash_from_column("chain", &chain)
                .map(|link| (ordinal, link))
                .map_err(|problem| StoreError::CorruptRow {
                    session: session.clone(),
                    ordinal,
                    problem,
                })
        })
        .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_become_half_open_bounds() {
        assert_eq!(ordinal_bounds(&(..)), (0, i64::MAX));
        assert_eq!(ordinal_bounds(&(2..5)), (2, 5));
        assert_eq!(ordinal_bounds(&(2..=5)), (2, 6));
        assert_eq!(ordinal_bounds(&(3..)), (3, i64::MAX));
        assert_eq!(ordinal_bounds(&(..=u64::MAX)), (0, i64::MAX));
        let excluded_start = (Bound::Excluded(1), Bound::Unbounded);
        assert_eq!(ordinal_bounds(&excluded_start), (2, i64::MAX));
    }

    #[test]
    fn short_hash_columns_are_named() {
        let problem = hash_from_column("chain", &[1, 2, 3]).unwrap_err();
        assert_eq!(problem.to_string(), "chain holds 3 bytes instead of 32");
    }
}
