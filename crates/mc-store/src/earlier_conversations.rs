//! What a session carries from the conversation its client compacted away (schema v23).
//!
//! Written once, when a session that continues a compacted conversation starts: the text is
//! `m[0]`'s `<earlier-conversation>` section, and every later fold shows it as stored, so
//! it never changes under the cache.

use mc_core::SessionId;
use rusqlite::OptionalExtension;

use crate::error::{Result, StoreError};
use crate::store::{ReadTx, WriteTx};

/// A session's carried conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlierConversationRow {
    /// The session it was carried from.
    pub earlier_session: String,
    /// The rendered section, exactly as `m[0]` shows it.
    pub text: String,
}

impl ReadTx<'_> {
    /// What `session` carries from the conversation before it, if it continues one.
    pub fn earlier_conversation(
        &self,
        session: &SessionId,
    ) -> Result<Option<EarlierConversationRow>> {
        self.conn()
            .prepare_cached(
                "SELECT earlier_session, text FROM earlier_conversations WHERE session_id = ?1",
            )
            .and_then(|mut statement| {
                statement
                    .query_row([session.as_str()], |row| {
                        Ok(EarlierConversationRow {
                            earlier_session: row.get(0)?,
                            text: row.get(1)?,
                        })
                    })
                    .optional()
            })
            .map_err(StoreError::sqlite(
                "reading a session's earlier conversation",
            ))
    }
}

impl WriteTx<'_> {
    /// Records what `session` carries from `earlier`, once: a session that already carries a
    /// conversation keeps the text it has (its `m[0]` may show it already).
    pub fn carry_earlier_conversation(
        &self,
        session: &SessionId,
        earlier: &SessionId,
        text: &str,
        now_ms: i64,
    ) -> Result<()> {
        self.conn()
            .execute(
                "INSERT INTO earlier_conversations (session_id, earlier_session, text, created_ms)
                 VALUES (?1, ?2, ?3, ?4) ON CONFLICT (session_id) DO NOTHING",
                rusqlite::params![session.as_str(), earlier.as_str(), text, now_ms],
            )
            .map_err(StoreError::sqlite(
                "recording a session's earlier conversation",
            ))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewSession, Store};
    use mc_core::Host;

    #[test]
    fn a_carried_conversation_is_written_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let (earlier, later) = (
            SessionId::new("cc-x-aaa").unwrap(),
            SessionId::new("cc-x-bbb").unwrap(),
        );
        store
            .write(|tx| {
                for id in [&earlier, &later] {
                    tx.upsert_session(
                        &NewSession {
                            id: id.clone(),
                            host: Host::ClaudeCode,
                            project: None,
                        },
                        1,
                    )?;
                }
                tx.carry_earlier_conversation(&later, &earlier, "first", 2)?;
                tx.carry_earlier_conversation(&later, &earlier, "second", 3)
            })
            .unwrap();
        let read = store.read(|tx| tx.earlier_conversation(&later)).unwrap();
        assert_eq!(
            read,
            Some(EarlierConversationRow {
                earlier_session: "cc-x-aaa".to_owned(),
                text: "first".to_owned(),
            })
        );
        assert_eq!(
            store.read(|tx| tx.earlier_conversation(&earlier)).unwrap(),
            None
        );
    }
}
