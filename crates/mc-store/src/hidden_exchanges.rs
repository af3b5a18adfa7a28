//! Exchanges the proxy ran with the model on a client's behalf (schema v12, last use v14).
//!
//! When the proxy executes its own agent tools, the model's calls and their results never
//! reach the client, yet every later request must carry them again, at the same place and
//! byte for byte, or the provider's cached prefix breaks and calls lose their results. The
//! proxy stores each such exchange under an anchor (a hash of the conversation before it,
//! chosen by the proxy) as an opaque JSON splice, and looks it up when a later request
//! passes the same point. The store neither reads nor checks the splice.
//!
//! An anchor belongs to a conversation, not to a session, so no session's end can remove
//! its exchanges. Each exchange instead keeps when a request last had it put back, and
//! exchanges unused for longer than the configured age are deleted
//! ([`WriteTx::delete_hidden_exchanges_unused_since`]): a conversation nobody continued for
//! that long has no request left that would need them, and one that is continued after all
//! forks from the stored history rather than sending calls without results.

use rusqlite::OptionalExtension;

use crate::error::{Result, StoreError};
use crate::store::{ReadTx, WriteTx};

/// One stored exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiddenExchange {
    /// The splice, as the proxy stored it.
    pub splice: String,
    /// When a request last had it put back (or, before any, when it was stored), unix ms.
    pub last_used_ms: i64,
}

impl ReadTx<'_> {
    /// The exchange stored under `anchor`, if any.
    pub fn hidden_exchange(&self, anchor: &str) -> Result<Option<HiddenExchange>> {
        self.conn()
            .prepare_cached("SELECT splice, last_used_ms FROM hidden_exchanges WHERE anchor = ?1")
            .and_then(|mut statement| {
                statement
                    .query_row([anchor], |row| {
                        Ok(HiddenExchange {
                            splice: row.get(0)?,
                            last_used_ms: row.get(1)?,
                        })
                    })
                    .optional()
            })
            .map_err(StoreError::sqlite("reading a hidden exchange"))
    }
}

impl WriteTx<'_> {
    /// Stores `splice` under `anchor`, replacing an earlier one: when a client repeats a
    /// request, the answer it echoes later is the one it received last. It counts as used
    /// now.
    pub fn put_hidden_exchange(&self, anchor: &str, splice: &str, now_ms: i64) -> Result<()> {
        self.conn()
            .prepare_cached(
                "INSERT INTO hidden_exchanges (anchor, splice, created_ms, last_used_ms)
                 VALUES (?1, ?2, ?3, ?3)
                 ON CONFLICT (anchor) DO UPDATE SET splice = excluded.splice,
                     created_ms = excluded.created_ms, last_used_ms = excluded.last_used_ms",
            )
            .and_then(|mut statement| statement.execute((anchor, splice, now_ms)))
            .map(|_| ())
            .map_err(StoreError::sqlite("storing a hidden exchange"))
    }

    /// Records that a request put back the exchanges under `anchors` at `now_ms`. A time
    /// earlier than the one recorded (another process's clock) leaves it as it is.
    pub fn mark_hidden_exchanges_used(&self, anchors: &[String], now_ms: i64) -> Result<()> {
        let mut statement = self
            .conn()
            .prepare_cached(
                "UPDATE hidden_exchanges SET last_used_ms = ?2
                 WHERE anchor = ?1 AND last_used_ms < ?2",
            )
            .map_err(StoreError::sqlite("marking hidden exchanges used"))?;
        for anchor in anchors {
            statement
                .execute((anchor, now_ms))
                .map_err(StoreError::sqlite("marking hidden exchanges used"))?;
        }
        Ok(())
    }

    /// Deletes the exchanges last used before `cutoff_ms`; how many went.
    pub fn delete_hidden_exchanges_unused_since(&self, cutoff_ms: i64) -> Result<usize> {
        self.conn()
            .prepare_cached("DELETE FROM hidden_exchanges WHERE last_used_ms < ?1")
            .and_then(|mut statement| statement.execute([cutoff_ms]))
            .map_err(StoreError::sqlite("deleting unused hidden exchanges"))
    }
}

#[cfg(test)]
mod tests {
    use super::HiddenExchange;
    use crate::Store;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        (dir, store)
    }

    fn read(store: &Store, anchor: &str) -> Option<HiddenExchange> {
        store.read(|tx| tx.hidden_exchange(anchor)).unwrap()
    }

    #[test]
    fn the_latest_splice_under_an_anchor_is_kept() {
        let (_dir, store) = store();
        assert_eq!(read(&store, "a"), None);
        store
            .write(|tx| tx.put_hidden_exchange("a", "[1]", 1))
            .unwrap();
        store
            .write(|tx| tx.put_hidden_exchange("a", "[2]", 2))
            .unwrap();
        let expected = HiddenExchange {
            splice: "[2]".to_owned(),
            last_used_ms: 2,
        };
        assert_eq!(read(&store, "a"), Some(expected));
    }

    /// Use moves an exchange's last use forward, never back, and only the exchanges named.
    #[test]
    fn marking_use_moves_only_the_named_exchanges_forward() {
        let (_dir, store) = store();
        store
            .write(|tx| {
                tx.put_hidden_exchange("a", "[]", 10)?;
                tx.put_hidden_exchange("b", "[]", 10)
            })
            .unwrap();
        store
            .write(|tx| tx.mark_hidden_exchanges_used(&["a".to_owned(), "gone".to_owned()], 50))
            .unwrap();
        store
            .write(|tx| tx.mark_hidden_exchanges_used(&["a".to_owned()], 20))
            .unwrap();
        let used = |anchor| read(&store, anchor).unwrap().last_used_ms;
        assert_eq!((used("a"), used("b")), (50, 10));
    }

    /// Exchanges last used before the cutoff go; one used since stays, whenever stored;
    /// nothing else is touched, however old.
    #[test]
    fn exchanges_unused_since_the_cutoff_are_deleted() {
        let (_dir, store) = store();
        let session = mc_core::SessionId::new("s").unwrap();
        store
            .write(|tx| {
                let new = crate::NewSession {
                    id: session.clone(),
                    host: mc_core::Host::Other,
                    project: None,
                };
                tx.upsert_session(&new, 1)?;
                let message =
                    mc_core::Message::new(mc_core::Role::User, vec![mc_core::Part::text("hi")]);
                tx.append_messages(&session, 0, &[message], 1)?;
                tx.put_hidden_exchange("old", "[1]", 100)?;
                tx.put_hidden_exchange("used", "[2]", 100)?;
                tx.put_hidden_exchange("new", "[3]", 900)?;
                tx.mark_hidden_exchanges_used(&["used".to_owned()], 800)
            })
            .unwrap();
        let deleted = store
            .write(|tx| tx.delete_hidden_exchanges_unused_since(500))
            .unwrap();
        assert_eq!(deleted, 1);
        assert_eq!(read(&store, "old"), None);
        assert!(read(&store, "used").is_some());
        assert!(read(&store, "new").is_some());
        assert_eq!(store.read(|tx| tx.message_count(&session)).unwrap(), 1);
    }
}
