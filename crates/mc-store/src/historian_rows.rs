//! What the historian publishes beside compartments (schema v7): facts and observations,
//! merged by a normalised key per scope, and one row per historian run.
//!
//! The scope is the session's project, so a fact restated in another session of the same
//! project is one fact seen twice; a session without a project keeps its own scope.

use mc_core::SessionId;
use mc_core::head::MemoryCategory;
use mc_core::historian::fact_key;

use crate::error::{Result, StoreError};
use crate::store::{ReadTx, WriteTx};

/// A fact the historian found, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFact {
    /// Its category.
    pub category: MemoryCategory,
    /// The wording first seen.
    pub content: String,
    /// How many runs stated it.
    pub seen_count: u64,
    /// When it was first and last stated, unix milliseconds.
    pub first_ms: i64,
    /// See `first_ms`.
    pub last_ms: i64,
}

/// One historian run, published or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistorianRun {
    /// When the run started and ended, unix milliseconds.
    pub started_ms: i64,
    /// See `started_ms`.
    pub finished_ms: i64,
    /// The chunk it read (inclusive ordinals).
    pub chunk_start: u64,
    /// See `chunk_start`.
    pub chunk_end: u64,
    /// `published`, `provisional` (published, the last compartment provisional: see
    /// `mark_provisional`), `staged` (a rebuild's, see `stage_compartments`), `held` (a
    /// rebuild's only compartment waits for more history), `stale` (another run published
    /// first) or `failed`.
    pub outcome: String,
    /// The model that answered (or was last tried).
    pub model: Option<String>,
    /// Model calls made (repair rounds and fallbacks included).
    pub calls: u32,
    /// Prompt tokens of those calls, as the provider reported them.
    pub input_tokens: u64,
    /// Output tokens of those calls.
    pub output_tokens: u64,
    /// Compartments published.
    pub compartments: u32,
    /// Why it failed, or what was held back.
    pub detail: Option<String>,
}

/// The scope facts and observations of `session` are merged in: its project, else itself.
pub fn history_scope(session: &SessionId, project: Option<&str>) -> String {
    match project {
        Some(project) => history_scope_of_project(project),
        None => history_scope_session(session),
    }
}

/// The scope of a session without a project: its facts and observations are its own, and
/// go when it is pruned.
pub(crate) fn history_scope_session(session: &SessionId) -> String {
    format!("session:{session}")
}

/// The scope of a project's facts, where project memory promotes them from.
pub(crate) fn history_scope_of_project(project: &str) -> String {
    format!("project:{project}")
}

impl WriteTx<'_> {
    /// Stores `facts` in `scope`: a new key is inserted, a known one counted as seen again.
    /// Returns how many were new.
    pub fn store_facts(
        &self,
        scope: &str,
        session: &SessionId,
        facts: &[(MemoryCategory, String)],
        now_ms: i64,
    ) -> Result<u64> {
        const DOING: &str = "storing historian facts";
        let mut upsert = self
            .conn()
            .prepare_cached(
                "INSERT INTO historian_facts
                   (scope, fact_key, category, content, seen_count, first_session, first_ms, last_ms)
                 VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?6)
                 ON CONFLICT (scope, fact_key)
                 DO UPDATE SET seen_count = seen_count + 1, last_ms = excluded.last_ms",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let mut new = 0;
        for (category, content) in facts {
            let key = fact_key(content);
            if key.is_empty() {
                continue;
            }
            let before = self.fact_seen(scope, &key)?;
            upsert
                .execute(rusqlite::params![
                    scope,
                    key,
                    category.as_str(),
                    content.trim(),
                    session.as_str(),
                    now_ms
                ])
                .map_err(StoreError::sqlite(DOING))?;
            new += u64::from(before.is_none());
        }
        Ok(new)
    }

    /// Stores user observations in `scope`, merged like facts.
    pub fn store_observations(
        &self,
        scope: &str,
        observations: &[String],
        now_ms: i64,
    ) -> Result<()> {
        let mut upsert = self
            .conn()
            .prepare_cached(
                "INSERT INTO user_observations
                   (scope, observation_key, text, seen_count, first_ms, last_ms)
                 VALUES (?1, ?2, ?3, 1, ?4, ?4)
                 ON CONFLICT (scope, observation_key)
                 DO UPDATE SET seen_count = seen_count + 1, last_ms = excluded.last_ms",
            )
            .map_err(StoreError::sqlite("storing user observations"))?;
        for text in observations {
            let key = fact_key(text);
            if key.is_empty() {
                continue;
            }
            upsert
                .execute(rusqlite::params![scope, key, text.trim(), now_ms])
                .map_err(StoreError::sqlite("storing user observations"))?;
        }
        Ok(())
    }

    /// Records one historian run.
    pub fn record_historian_run(&self, session: &SessionId, run: &HistorianRun) -> Result<()> {
        self.require_session(session)?;
        self.conn()
            .prepare_cached(
                "INSERT INTO historian_runs (session_id, started_ms, finished_ms, chunk_start,
                   chunk_end, outcome, model, calls, input_tokens, output_tokens, compartments,
                   detail)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )
            .and_then(|mut insert| {
                insert.execute(rusqlite::params![
                    session.as_str(),
                    run.started_ms,
                    run.finished_ms,
                    run.chunk_start,
                    run.chunk_end,
                    run.outcome,
                    run.model,
                    run.calls,
                    run.input_tokens,
                    run.output_tokens,
                    run.compartments,
                    run.detail,
                ])
            })
            .map(|_| ())
            .map_err(StoreError::sqlite("recording a historian run"))
    }
}

impl ReadTx<'_> {
    fn fact_seen(&self, scope: &str, key: &str) -> Result<Option<u64>> {
        use rusqlite::OptionalExtension;
        self.conn()
            .prepare_cached(
                "SELECT seen_count FROM historian_facts WHERE scope = ?1 AND fact_key = ?2",
            )
            .and_then(|mut statement| {
                statement
                    .query_row([scope, key], |row| row.get(0))
                    .optional()
            })
            .map_err(StoreError::sqlite("reading historian facts"))
    }

    /// The facts stored in `scope`, oldest first.
    pub fn historian_facts(&self, scope: &str) -> Result<Vec<StoredFact>> {
        const DOING: &str = "reading historian facts";
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT category, content, seen_count, first_ms, last_ms FROM historian_facts
                 WHERE scope = ?1 ORDER BY first_ms, rowid",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([scope], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    StoredFact {
                        category: MemoryCategory::ProjectRules,
                        content: row.get(1)?,
                        seen_count: row.get(2)?,
                        first_ms: row.get(3)?,
                        last_ms: row.get(4)?,
                    },
                ))
            })
            .map_err(StoreError::sqlite(DOING))?;
        let mut facts = Vec::new();
        for row in rows {
            let (category, mut fact) = row.map_err(StoreError::sqlite(DOING))?;
            // A category this binary does not know is skipped, not an error: a newer binary
            // may add one.
            if let Some(known) = MemoryCategory::ALL
                .into_iter()
                .find(|known| known.as_str() == category)
            {
                fact.category = known;
                facts.push(fact);
            }
        }
        Ok(facts)
    }

    /// The user observations stored in `scope` with how often each was seen, oldest first.
    pub fn user_observations(&self, scope: &str) -> Result<Vec<(String, u64)>> {
        const DOING: &str = "reading user observations";
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT text, seen_count FROM user_observations WHERE scope = ?1
                 ORDER BY first_ms, rowid",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([scope], |row| Ok((row.get(0)?, row.get(1)?)))
            .map_err(StoreError::sqlite(DOING))?;
        rows.map(|row| row.map_err(StoreError::sqlite(DOING)))
            .collect()
    }

    /// The session's newest `limit` historian runs, newest first.
    pub fn historian_runs(&self, session: &SessionId, limit: usize) -> Result<Vec<HistorianRun>> {
        const DOING: &str = "reading historian runs";
        let mut statement = self
            .conn()
            .prepare_cached(&format!(
                "SELECT {HISTORIAN_RUN_COLUMNS} FROM historian_runs WHERE session_id = ?1
                 ORDER BY started_ms DESC, rowid DESC LIMIT ?2"
            ))
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map(
                rusqlite::params![session.as_str(), i64::try_from(limit).unwrap_or(i64::MAX)],
                |row| historian_run_from(row, 0),
            )
            .map_err(StoreError::sqlite(DOING))?;
        rows.map(|row| row.map_err(StoreError::sqlite(DOING)))
            .collect()
    }

    /// The newest `limit` historian runs of every session, newest first, each with its
    /// session.
    pub fn recent_historian_runs(&self, limit: usize) -> Result<Vec<(SessionId, HistorianRun)>> {
        const DOING: &str = "reading recent historian runs";
        let mut statement = self
            .conn()
            .prepare_cached(&format!(
                "SELECT session_id, {HISTORIAN_RUN_COLUMNS} FROM historian_runs
                 ORDER BY started_ms DESC, rowid DESC LIMIT ?1"
            ))
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |row| {
                Ok((row.get::<_, String>(0)?, historian_run_from(row, 1)?))
            })
            .map_err(StoreError::sqlite(DOING))?;
        let mut runs = Vec::new();
        for row in rows {
            let (session, run) = row.map_err(StoreError::sqlite(DOING))?;
            // A session id the type refuses cannot have been stored by this binary; its runs
            // are left out rather than failing the list.
            if let Ok(session) = SessionId::new(session) {
                runs.push((session, run));
            }
        }
        Ok(runs)
    }
}

/// The columns [`historian_run_from`] reads, in order.
const HISTORIAN_RUN_COLUMNS: &str = "started_ms, finished_ms, chunk_start, chunk_end, outcome, \
     model, calls, input_tokens, output_tokens, compartments, detail";

/// A run read from `row`, its columns ([`HISTORIAN_RUN_COLUMNS`]) starting at `first`.
fn historian_run_from(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<HistorianRun> {
    Ok(HistorianRun {
        started_ms: row.get(first)?,
        finished_ms: row.get(first + 1)?,
        chunk_start: row.get(first + 2)?,
        chunk_end: row.get(first + 3)?,
        outcome: row.get(first + 4)?,
        model: row.get(first + 5)?,
        calls: row.get(first + 6)?,
        input_tokens: row.get(first + 7)?,
        output_tokens: row.get(first + 8)?,
        compartments: row.get(first + 9)?,
        detail: row.get(first + 10)?,
    })
}

#[cfg(test)]
mod tests {
    use mc_core::head::MemoryCategory;
    use mc_core::{Host, SessionId};

    use super::*;
    use crate::{NewSession, Store};

    #[test]
    fn facts_merge_by_key_and_runs_read_back_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let session = SessionId::new("s").unwrap();
        let scope = history_scope(&session, Some("p1"));
        let new = store
            .write(|tx| {
                tx.upsert_session(
                    &NewSession {
                        id: session.clone(),
                        host: Host::Other,
                        project: None,
                    },
                    1,
                )?;
                let facts = [
                    (MemoryCategory::Naming, "Tests end in _test.".to_owned()),
                    (MemoryCategory::Naming, "tests end in  _TEST".to_owned()),
                    (MemoryCategory::ConfigValues, "Port 8080.".to_owned()),
                ];
                let new = tx.store_facts(&scope, &session, &facts, 5)?;
                tx.store_observations(&scope, &["Prefers short answers.".to_owned()], 5)?;
                tx.store_observations(&scope, &["prefers short answers".to_owned()], 6)?;
                for (started, outcome) in [(10, "published"), (20, "failed")] {
                    tx.record_historian_run(
                        &session,
                        &HistorianRun {
                            started_ms: started,
                            finished_ms: started + 3,
                            chunk_start: 0,
                            chunk_end: 9,
                            outcome: outcome.into(),
                            model: Some("m".into()),
                            calls: 1,
                            input_tokens: 100,
                            output_tokens: 50,
                            compartments: 1,
                            detail: None,
                        },
                    )?;
                }
                Ok(new)
            })
            .unwrap();
        assert_eq!(new, 2);
        let (facts, observations, runs) = store
            .read(|tx| {
                Ok((
                    tx.historian_facts(&scope)?,
                    tx.user_observations(&scope)?,
                    tx.historian_runs(&session, 10)?,
                ))
            })
            .unwrap();
        assert_eq!(facts.len(), 2);
        assert_eq!(
            (facts[0].content.as_str(), facts[0].seen_count),
            ("Tests end in _test.", 2)
        );
        assert_eq!(observations, [("Prefers short answers.".to_owned(), 2)]);
        assert_eq!(runs[0].outcome, "failed");
        assert_eq!(runs.len(), 2);
        let recent = store.read(|tx| tx.recent_historian_runs(1)).unwrap();
        assert_eq!(recent.len(), 1);
        assert_eq!(recent[0].0, session);
        assert_eq!(recent[0].1, runs[0]);
    }
}
