//! The use of a team's memories as this machine knows it (schema v27, team-wide since v28).
//!
//! `archive_stale_memories` retires a memory nothing has needed for a long time, and a
//! memory any agent of the team keeps finding is needed, on whichever machine it searched.
//! A team's memories are not rows of the local `memories` table, so their use is kept beside
//! the cache, keyed by the team's id. It gathers two ways: this machine's own searches and
//! restatements ([`WriteTx::record_team_memory_retrievals`], [`WriteTx::note_team_restated`]),
//! each also queued for the team store (`team_use_outbox.rs`), and the team's use as the sync
//! brings it ([`WriteTx::cache_team_use`]). Times only ever move forwards, so a late or
//! replayed figure never makes a memory look older than it is.

use mc_core::ProjectId;

use crate::error::{Result, StoreError};
use crate::memory_rows::{COLUMNS, MemoryStatus, memory_from_row};
use crate::memory_use::{MemoryUse, UsedMemory, with_status};
use crate::store::{ReadTx, WriteTx};

/// The use of one team memory: a figure to send to the team store, or the team's as read
/// back from it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TeamUse {
    /// The team's id of the memory.
    pub id: u64,
    /// How many searches returned it (sent: since the last batch; read: the team's total).
    pub retrievals: u64,
    /// When a search last returned it, unix milliseconds.
    pub last_retrieved_ms: Option<i64>,
    /// When its fact was last stated again, unix milliseconds.
    pub last_restated_ms: Option<i64>,
}

/// SQL keeping the later of two nullable times (SQLite's `MAX` is null when either is).
macro_rules! later {
    ($old:literal, $new:literal) => {
        concat!(
            "MAX(COALESCE(",
            $old,
            ", ",
            $new,
            "), COALESCE(",
            $new,
            ", ",
            $old,
            "))"
        )
    };
}
pub(crate) use later;

impl ReadTx<'_> {
    /// The project's cached team memories whose status is in `statuses`, oldest first, each
    /// with its use: this machine's and the team's as last synced.
    pub fn team_memories_with_use(
        &self,
        project: &ProjectId,
        statuses: &[MemoryStatus],
    ) -> Result<Vec<UsedMemory>> {
        const DOING: &str = "reading cached team memories with their use";
        let mut statement = self
            .conn()
            .prepare_cached(&format!(
                "SELECT {COLUMNS}, retrievals, last_retrieved_ms, last_restated_ms FROM (
                   SELECT m.*, COALESCE(u.retrievals, 0) AS retrievals, u.last_retrieved_ms,
                     u.last_restated_ms
                   FROM team_memories m LEFT JOIN team_memory_use u
                     ON u.project_id = m.project_id AND u.id = m.id
                   WHERE m.project_id = ?1)
                 ORDER BY id"
            ))
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([project.as_str()], |row| {
                Ok(UsedMemory {
                    memory: memory_from_row(row)?,
                    used: MemoryUse {
                        retrievals: row.get(9)?,
                        last_retrieved_ms: row.get(10)?,
                        last_restated_ms: row.get(11)?,
                        recorded_from_ms: None,
                    },
                })
            })
            .map_err(StoreError::sqlite(DOING))?;
        with_status(rows, statuses, DOING)
    }
}

impl WriteTx<'_> {
    /// Records that a search returned the project's cached team memories `ids` at `now_ms`,
    /// here and in the queue bound for the team store; ids the cache does not hold for the
    /// project are ignored. Returns how many were counted.
    pub fn record_team_memory_retrievals(
        &self,
        project: &ProjectId,
        ids: &[u64],
        now_ms: i64,
    ) -> Result<u64> {
        const DOING: &str = "recording that a search returned a team memory";
        let mut statement = self
            .conn()
            .prepare_cached(concat!(
                "INSERT INTO team_memory_use (project_id, id, retrievals, last_retrieved_ms)
                 SELECT project_id, id, 1, ?3 FROM team_memories
                 WHERE project_id = ?1 AND id = ?2
                 ON CONFLICT (project_id, id) DO UPDATE SET
                   retrievals = retrievals + 1,
                   last_retrieved_ms = ",
                later!("last_retrieved_ms", "excluded.last_retrieved_ms")
            ))
            .map_err(StoreError::sqlite(DOING))?;
        let mut counted = 0;
        for &id in ids {
            let changed = statement
                .execute(rusqlite::params![project.as_str(), id, now_ms])
                .map_err(StoreError::sqlite(DOING))?;
            if changed > 0 {
                let used = TeamUse {
                    id,
                    retrievals: 1,
                    last_retrieved_ms: Some(now_ms),
                    last_restated_ms: None,
                };
                self.queue_team_use(project, &used)?;
                counted += 1;
            }
        }
        Ok(counted)
    }

    /// Records that the fact of the project's cached team memory `id` was stated again at
    /// `at_ms`, and queues it for the team store when that is news: a time no later than
    /// the one recorded changes nothing. Returns whether it was news.
    pub fn note_team_restated(&self, project: &ProjectId, id: u64, at_ms: i64) -> Result<bool> {
        const DOING: &str = "recording a restated team memory";
        let changed = self
            .conn()
            .prepare_cached(
                "INSERT INTO team_memory_use (project_id, id, last_restated_ms)
                 SELECT project_id, id, ?3 FROM team_memories WHERE project_id = ?1 AND id = ?2
                 ON CONFLICT (project_id, id) DO UPDATE SET
                   last_restated_ms = excluded.last_restated_ms
                 WHERE last_restated_ms IS NULL OR last_restated_ms < excluded.last_restated_ms",
            )
            .and_then(|mut statement| {
                statement.execute(rusqlite::params![project.as_str(), id, at_ms])
            })
            .map_err(StoreError::sqlite(DOING))?;
        if changed == 0 {
            return Ok(false);
        }
        let used = TeamUse {
            id,
            last_restated_ms: Some(at_ms),
            ..TeamUse::default()
        };
        self.queue_team_use(project, &used)?;
        Ok(true)
    }

    /// Merges the team's use of the project's memories, as read from the team store, into
    /// what this machine knows: the later of each time, the larger count (the team's total
    /// includes this machine's searches once they have landed). Merging twice changes nothing.
    pub fn cache_team_use(&self, project: &ProjectId, uses: &[TeamUse]) -> Result<()> {
        const DOING: &str = "caching the team's use of its memories";
        let mut statement = self
            .conn()
            .prepare_cached(concat!(
                "INSERT INTO team_memory_use (project_id, id, retrievals, last_retrieved_ms,
                   last_restated_ms) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (project_id, id) DO UPDATE SET
                   retrievals = MAX(retrievals, excluded.retrievals),
                   last_retrieved_ms = ",
                later!("last_retrieved_ms", "excluded.last_retrieved_ms"),
                ", last_restated_ms = ",
                later!("last_restated_ms", "excluded.last_restated_ms")
            ))
            .map_err(StoreError::sqlite(DOING))?;
        for used in uses {
            statement
                .execute(rusqlite::params![
                    project.as_str(),
                    used.id,
                    used.retrievals,
                    used.last_retrieved_ms,
                    used.last_restated_ms
                ])
                .map_err(StoreError::sqlite(DOING))?;
        }
        Ok(())
    }
}
