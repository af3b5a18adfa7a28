//! Forks: a branch of a conversation, started when a client rewinds or edits a message.
//!
//! A fork is a session of its own whose first `at` messages are *copies* of its parent's
//! (content, hashes, links and original timestamps). Copying costs some space but keeps every
//! session self-contained: reading, appending and chain lookup never follow parent pointers,
//! and the parent's log is never touched. The parent and the fork point are recorded for the
//! dashboard and for history that spans branches.

use mc_core::SessionId;

use crate::error::{Result, StoreError};
use crate::sessions::SessionRecord;
use crate::store::WriteTx;

impl WriteTx<'_> {
    /// Creates session `new_id` from the first `at_ordinal` messages of `parent`, with the
    /// parent's host and project, created and seen at `now_ms`; the fork is gated as its
    /// parent is, and the copies accepted in the parent count as accepted in it.
    ///
    /// `at_ordinal` may equal the parent's message count (a fork of the whole conversation)
    /// but not exceed it ([`StoreError::ForkBeyondEnd`]); `new_id` must be unused
    /// ([`StoreError::SessionExists`]).
    pub fn fork_session(
        &self,
        parent: &SessionId,
        new_id: &SessionId,
        at_ordinal: u64,
        now_ms: i64,
    ) -> Result<SessionRecord> {
        let parent_record = self.require_session(parent)?;
        let count = self.message_count(parent)?;
        if at_ordinal > count {
            return Err(StoreError::ForkBeyondEnd {
                parent: parent.clone(),
                at: at_ordinal,
                count,
            });
        }
        if self.get_session(new_id)?.is_some() {
            return Err(StoreError::SessionExists {
                session: new_id.clone(),
            });
        }
        self.conn()
            .execute(
                "INSERT INTO sessions
                     (id, host, project, parent_id, fork_ordinal, created_ms, last_seen_ms,
                      accepted_messages, mode, spawned_by)
                 SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?6, min(?5, accepted_messages), mode, spawned_by
                 FROM sessions WHERE id = ?4",
                (
                    new_id.as_str(),
                    parent_record.host.as_str(),
                    parent_record
                        .project
                        .as_ref()
                        .map(|project| project.as_str()),
                    parent.as_str(),
                    at_ordinal,
                    now_ms,
                ),
            )
            .map_err(StoreError::sqlite("creating a fork"))?;
        self.conn()
            .execute(
                "INSERT INTO messages (session_id, ordinal, role, content, hash, chain, created_ms)
                 SELECT ?1, ordinal, role, content, hash, chain, created_ms FROM messages
                 WHERE session_id = ?2 AND ordinal < ?3",
                (new_id.as_str(), parent.as_str(), at_ordinal),
            )
            .map_err(StoreError::sqlite("copying messages into a fork"))?;
        self.require_session(new_id)
    }
}
