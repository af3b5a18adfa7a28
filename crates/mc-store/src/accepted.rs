//! Which of a session's messages a provider has accepted, and so may be found.
//!
//! The proxy stores a request's messages before it sends the request, so anything that can
//! reach its port reaches the raw log. In a gated session only the messages a provider then
//! took (it answered a call carrying them with a success) are searched, turned into hits or
//! summarised; the rest stay in the raw log, found by nothing, until an accepted call carries
//! them. Per session this is one count, the leading messages accepted, since a call always
//! carries the conversation from its start. A session written through the library is not
//! gated (`NULL`): all of it counts as accepted.

use mc_core::SessionId;
use rusqlite::OptionalExtension;

use crate::error::{Result, StoreError};
use crate::store::{ReadTx, WriteTx};

impl WriteTx<'_> {
    /// Gates `session`: from now on only messages a provider accepted count. A session not
    /// gated yet counts its first `held` messages (those it held before the request being
    /// stored, in the same transaction) as accepted; a gated one is left as it is (no row is
    /// written: this runs on every pass).
    pub fn gate_until_accepted(&self, session: &SessionId, held: u64) -> Result<()> {
        self.conn()
            .prepare_cached(
                "UPDATE sessions SET accepted_messages = ?2
                 WHERE id = ?1 AND accepted_messages IS NULL",
            )
            .and_then(|mut statement| statement.execute((session.as_str(), held)))
            .map_err(StoreError::sqlite(
                "gating a session's messages until accepted",
            ))?;
        Ok(())
    }

    /// Records that a provider accepted a call carrying the first `messages` messages of
    /// `session`. The count never goes down, and never past the messages stored (a message
    /// stored later was not in the call). Sessions not gated, and unknown ones, are left
    /// alone.
    pub fn accept_messages(&self, session: &SessionId, messages: u64) -> Result<()> {
        self.conn()
            .prepare_cached(
                "UPDATE sessions SET accepted_messages = max(accepted_messages, min(?2,
                     (SELECT coalesce(max(ordinal) + 1, 0) FROM messages WHERE session_id = ?1)))
                 WHERE id = ?1 AND accepted_messages IS NOT NULL",
            )
            .and_then(|mut statement| statement.execute((session.as_str(), messages)))
            .map_err(StoreError::sqlite(
                "recording the messages a provider accepted",
            ))?;
        Ok(())
    }
}

impl ReadTx<'_> {
    /// How many leading messages of `session` count as accepted: `None` when all of them do
    /// (the session is not gated, or unknown).
    pub fn accepted_messages(&self, session: &SessionId) -> Result<Option<u64>> {
        let count: Option<Option<u64>> = self
            .conn()
            .prepare_cached("SELECT accepted_messages FROM sessions WHERE id = ?1")
            .and_then(|mut statement| {
                statement
                    .query_row([session.as_str()], |row| row.get(0))
                    .optional()
            })
            .map_err(StoreError::sqlite(
                "reading the messages a provider accepted",
            ))?;
        Ok(count.flatten())
    }
}

#[cfg(test)]
mod tests {
    use mc_core::{Host, Message, Part, Role};

    use crate::{NewSession, Store};

    use super::*;

    fn s() -> SessionId {
        SessionId::new("s").unwrap()
    }

    fn store_with(messages: usize) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        store
            .write(|tx| {
                let session = NewSession {
                    id: s(),
                    host: Host::ClaudeCode,
                    project: None,
                };
                tx.upsert_session(&session, 1)?;
                let log: Vec<Message> = (0..messages)
                    .map(|n| Message::new(Role::User, vec![Part::text(format!("turn {n}"))]))
                    .collect();
                tx.append_messages(&s(), 0, &log, 1)?;
                Ok(())
            })
            .unwrap();
        (dir, store)
    }

    fn accepted(store: &Store) -> Option<u64> {
        store.read(|tx| tx.accepted_messages(&s())).unwrap()
    }

    #[test]
    fn an_ungated_session_counts_everything_and_accepting_never_gates_it() {
        let (_dir, store) = store_with(3);
        assert_eq!(accepted(&store), None);
        store.write(|tx| tx.accept_messages(&s(), 1)).unwrap();
        assert_eq!(accepted(&store), None);
    }

    #[test]
    fn gating_keeps_what_was_held_and_acceptance_only_grows_within_the_log() {
        let (_dir, store) = store_with(3);
        store.write(|tx| tx.gate_until_accepted(&s(), 3)).unwrap();
        assert_eq!(accepted(&store), Some(3));
        store.write(|tx| tx.gate_until_accepted(&s(), 1)).unwrap();
        assert_eq!(accepted(&store), Some(3), "gating twice changes nothing");
        store.write(|tx| tx.accept_messages(&s(), 2)).unwrap();
        assert_eq!(accepted(&store), Some(3), "never goes down");
        store.write(|tx| tx.accept_messages(&s(), 99)).unwrap();
        assert_eq!(accepted(&store), Some(3), "never past the stored log");
    }

    #[test]
    fn messages_stored_after_the_gate_wait_for_acceptance() {
        let (_dir, store) = store_with(0);
        store
            .write(|tx| {
                let log = [Message::new(Role::User, vec![Part::text("new")])];
                tx.append_messages(&s(), 0, &log, 2)?;
                tx.gate_until_accepted(&s(), 0)
            })
            .unwrap();
        assert_eq!(accepted(&store), Some(0));
        store.write(|tx| tx.accept_messages(&s(), 1)).unwrap();
        assert_eq!(accepted(&store), Some(1));
    }

    #[test]
    fn a_fork_is_gated_as_its_parent_and_keeps_what_it_copied_accepted() {
        let (_dir, store) = store_with(3);
        let fork = |name: &str, at: u64| {
            let id = SessionId::new(name).unwrap();
            store
                .write(|tx| tx.fork_session(&s(), &id, at, 2).map(|_| ()))
                .unwrap();
            store.read(|tx| tx.accepted_messages(&id)).unwrap()
        };
        assert_eq!(fork("ungated~1", 2), None);
        store.write(|tx| tx.gate_until_accepted(&s(), 2)).unwrap();
        assert_eq!(fork("gated~1", 3), Some(2));
        assert_eq!(fork("gated~2", 1), Some(1));
    }

    #[test]
    fn search_finds_only_accepted_messages_of_a_gated_session() {
        let (_dir, store) = store_with(3);
        let query = mc_core::search::fts_query("turn").unwrap();
        let found = |store: &Store| -> Vec<u64> {
            store.index_pending_messages().unwrap();
            let mut ordinals: Vec<u64> = store
                .read(|tx| tx.search_messages(&query, &crate::SearchScope::default(), 10))
                .unwrap()
                .into_iter()
                .map(|hit| hit.ordinal)
                .collect();
            ordinals.sort_unstable();
            ordinals
        };
        assert_eq!(found(&store), [0, 1, 2]);
        store.write(|tx| tx.gate_until_accepted(&s(), 1)).unwrap();
        assert_eq!(found(&store), [0]);
        store.write(|tx| tx.accept_messages(&s(), 3)).unwrap();
        assert_eq!(found(&store), [0, 1, 2]);
    }
}
