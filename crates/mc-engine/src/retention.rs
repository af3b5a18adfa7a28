//! Retention through the engine: the sessions last active longer ago than
//! `retention.session_days` are pruned from the store (see `mc_store`'s prune), and the
//! engine forgets what its caches held for them.

use mc_store::PruneRun;

use crate::error::Result;
use crate::pass::Engine;

impl Engine {
    /// Prunes every session due at `now_ms` under `retention.session_days` (a parent only
    /// once its forks are due too), each in its own transaction, then returns the free pages.
    /// It blocks for as long as the deletions take: run it on a blocking thread.
    pub fn prune_expired(&self, now_ms: i64) -> Result<PruneRun> {
        let cutoff_ms = self.config.retention.session_cutoff_ms(now_ms);
        let store = self.store();
        let due = store.sessions_due_for_prune(cutoff_ms)?;
        let run = store.prune_sessions(&due, Some(cutoff_ms), false)?;
        for pruned in &run.sessions {
            self.caches.forget(&pruned.session);
        }
        Ok(run)
    }
}

#[cfg(test)]
mod tests {
    use mc_core::config::Config;
    use mc_core::{Host, SessionId};
    use mc_store::{NewSession, Store};

    use super::*;

    const DAY_MS: i64 = 24 * 60 * 60 * 1000;

    #[test]
    fn only_sessions_past_the_configured_days_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let now_ms = 1_000 * DAY_MS;
        for (name, seen_ms) in [("old", now_ms - 91 * DAY_MS), ("recent", now_ms - DAY_MS)] {
            store
                .write(|tx| {
                    tx.upsert_session(
                        &NewSession {
                            id: SessionId::new(name).unwrap(),
                            host: Host::ClaudeCode,
                            project: None,
                        },
                        seen_ms,
                    )
                })
                .unwrap();
        }
        let engine = Engine::new(store, Config::default());
        let run = engine.prune_expired(now_ms).unwrap();
        let pruned: Vec<&str> = run
            .sessions
            .iter()
            .map(|session| session.session.as_str())
            .collect();
        assert_eq!(pruned, ["old"]);
        assert!(run.reclaimed.is_some());
        let left = engine
            .store()
            .read(|tx| tx.get_session(&SessionId::new("recent").unwrap()))
            .unwrap();
        assert!(left.is_some());
        assert!(engine.prune_expired(now_ms).unwrap().sessions.is_empty());
    }
}
