//! Verifying every session's hash chain, for `doctor` and for crash tests.
//!
//! The chain is what makes the raw log trustworthy after a crash: each link commits to every
//! message before it, so a lost, reordered, altered or half-written row shows up as the first
//! link that does not follow. Links are recomputed with [`HashChain::next_link`], the function
//! [`append_messages`](crate::WriteTx::append_messages) stores them with, and each row is
//! decoded the way a read decodes it, so a verified log is one every read will accept.

use mc_core::{ContentHash, HashChain, SessionId};

use crate::error::{Result, RowProblem, StoreError};
use crate::messages::MessageRow;
use crate::store::ReadTx;

/// What verifying every chain found.
#[derive(Debug, Default)]
pub struct ChainReport {
    /// Sessions whose log was walked (all of them, empty ones included).
    pub sessions_checked: u64,
    /// Messages verified, over all sessions, up to each broken session's first bad row.
    pub messages_checked: u64,
    /// Sessions whose chain does not verify, in id order.
    pub broken: Vec<BrokenChain>,
}

impl ChainReport {
    /// Whether every session verified.
    pub fn is_intact(&self) -> bool {
        self.broken.is_empty()
    }
}

/// A session whose chain breaks, and where.
#[derive(Debug)]
pub struct BrokenChain {
    /// The session id as stored (it may itself be the damage).
    pub session: String,
    /// The first ordinal that does not verify; every message before it does.
    pub ordinal: u64,
    /// What is wrong with that row.
    pub problem: RowProblem,
}

impl ReadTx<'_> {
    /// Walks every session's log in this transaction's snapshot and recomputes each link.
    ///
    /// A damaged row is a finding, not an error: the walk goes on with the next session, so
    /// one report names every broken session. Only SQLite failing is an `Err`.
    pub fn verify_chains(&self) -> Result<ChainReport> {
        let ids: Vec<String> = self
            .conn()
            .prepare("SELECT id FROM sessions ORDER BY id")
            .and_then(|mut statement| {
                statement
                    .query_map([], |row| row.get(0))?
                    .collect::<rusqlite::Result<_>>()
            })
            .map_err(StoreError::sqlite("listing sessions to verify"))?;
        let mut report = ChainReport::default();
        for id in ids {
            report.sessions_checked += 1;
            let session = match SessionId::new(id.as_str()) {
                Ok(session) => session,
                Err(err) => {
                    report.broken.push(BrokenChain {
                        session: id,
                        ordinal: 0,
                        problem: RowProblem::Id(err),
                    });
                    continue;
                }
            };
            let (checked, broken) = self.verify_chain(&session)?;
            report.messages_checked += checked;
            report.broken.extend(broken);
        }
        Ok(report)
    }

    /// One session: the messages verified, and the first bad row if there is one.
    fn verify_chain(&self, session: &SessionId) -> Result<(u64, Option<BrokenChain>)> {
        let doing = "reading messages to verify";
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT ordinal, role, content, hash, chain, created_ms FROM messages
                 WHERE session_id = ?1 ORDER BY ordinal",
            )
            .map_err(StoreError::sqlite(doing))?;
        let mut rows = statement
            .query([session.as_str()])
            .map_err(StoreError::sqlite(doing))?;
        let mut previous: Option<ContentHash> = None;
        let mut expected = 0;
        while let Some(row) = rows.next().map_err(StoreError::sqlite(doing))? {
            let row = MessageRow::from_row(row).map_err(StoreError::sqlite(doing))?;
            let broken = |ordinal, problem| BrokenChain {
                session: session.to_string(),
                ordinal,
                problem,
            };
            let stored = match row.decode(session) {
                Ok(stored) => stored,
                Err(StoreError::CorruptRow {
                    ordinal, problem, ..
                }) => return Ok((expected, Some(broken(ordinal, problem)))),
                Err(other) => return Err(other),
            };
            if stored.ordinal != expected {
                let problem = RowProblem::OrdinalGap { expected };
                return Ok((expected, Some(broken(stored.ordinal, problem))));
            }
            let link = HashChain::next_link(previous.as_ref(), &stored.hash);
            if link != stored.chain {
                return Ok((expected, Some(broken(expected, RowProblem::ChainMismatch))));
            }
            previous = Some(link);
            expected += 1;
        }
        Ok((expected, None))
    }
}

#[cfg(test)]
mod tests {
    use mc_core::{Host, Message, Part, Role};

    use crate::{NewSession, Store};

    use super::*;

    fn store_with(sessions: &[(&str, usize)]) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        store
            .write(|tx| {
                for (name, count) in sessions {
                    let id = SessionId::new(*name).unwrap();
                    let session = NewSession {
                        id: id.clone(),
                        host: Host::ClaudeCode,
                        project: None,
                    };
                    tx.upsert_session(&session, 1)?;
                    let messages: Vec<Message> = (0..*count)
                        .map(|n| Message::new(Role::User, vec![Part::text(format!("turn {n}"))]))
                        .collect();
                    tx.append_messages(&id, 0, &messages, 1)?;
                }
                Ok(())
            })
            .unwrap();
        (dir, store)
    }

    /// Runs `sql` on the file behind the store's back, with the append-only trigger lifted,
    /// the way an outside edit or a torn write would change a row.
    fn tamper(dir: &tempfile::TempDir, sql: &str) {
        let conn = rusqlite::Connection::open(dir.path().join("context.db")).unwrap();
        conn.execute_batch(&format!(
            "DROP TRIGGER messages_are_append_only_update;
             DROP TRIGGER messages_are_append_only_delete;
             {sql}"
        ))
        .unwrap();
    }

    fn findings(store: &Store) -> (u64, u64, Vec<(String, u64, String)>) {
        let report = store.read(|tx| tx.verify_chains()).unwrap();
        let broken = report
            .broken
            .iter()
            .map(|b| (b.session.clone(), b.ordinal, b.problem.to_string()))
            .collect();
        (report.sessions_checked, report.messages_checked, broken)
    }

    #[test]
    fn an_untouched_store_verifies() {
        let (_dir, store) = store_with(&[("a", 3), ("b", 0), ("c", 5)]);
        assert_eq!(findings(&store), (3, 8, vec![]));
    }

    #[test]
    fn a_forked_session_verifies_with_its_copied_links() {
        let (_dir, store) = store_with(&[("parent", 4)]);
        store
            .write(|tx| {
                let parent = SessionId::new("parent").unwrap();
                let fork = SessionId::new("fork").unwrap();
                tx.fork_session(&parent, &fork, 2, 2)?;
                let extra = Message::new(Role::User, vec![Part::text("another way")]);
                tx.append_messages(&fork, 2, &[extra], 2)
            })
            .unwrap();
        assert_eq!(findings(&store), (2, 7, vec![]));
    }

    #[test]
    fn a_replaced_link_is_named_at_its_ordinal() {
        let (dir, store) = store_with(&[("a", 2), ("b", 4)]);
        tamper(
            &dir,
            "UPDATE messages SET chain = zeroblob(32) WHERE session_id = 'b' AND ordinal = 2",
        );
        let link = "chain link does not follow from the message hash and the previous link";
        assert_eq!(findings(&store), (2, 4, vec![("b".into(), 2, link.into())]));
    }

    #[test]
    fn edited_content_and_a_lost_row_are_both_found() {
        let (dir, store) = store_with(&[("a", 3), ("b", 3)]);
        tamper(
            &dir,
            r#"UPDATE messages
                   SET content = (SELECT content FROM messages WHERE session_id = 'a' AND ordinal = 0)
                   WHERE session_id = 'a' AND ordinal = 1;
               DELETE FROM messages WHERE session_id = 'b' AND ordinal = 0;"#,
        );
        let (sessions, messages, broken) = findings(&store);
        assert_eq!((sessions, messages), (2, 1));
        assert_eq!(
            broken,
            vec![
                (
                    "a".into(),
                    1,
                    "content does not match its stored hash".into()
                ),
                ("b".into(), 1, "ordinal found where 0 was expected".into()),
            ]
        );
    }
}
