//! When a search on this machine last returned each of a team's memories (schema v27).
//!
//! `archive_stale_memories` retires a memory nothing has needed for a long time, and a
//! memory the agent keeps finding is needed. A team's memories are not rows of the local
//! `memories` table, so their use is kept beside the cache, keyed by the team's id
//! ([`WriteTx::record_team_memory_retrievals`]), and read with the cached memories
//! ([`ReadTx::team_memories_with_use`]). It is this machine's use only: a colleague's
//! searches are not seen here (the README's "Not shared yet" says so).

use mc_core::ProjectId;

use crate::error::{Result, StoreError};
use crate::memory_rows::{COLUMNS, MemoryStatus, memory_from_row};
use crate::memory_use::{MemoryUse, UsedMemory, with_status};
use crate::store::{ReadTx, WriteTx};

impl ReadTx<'_> {
    /// The project's cached team memories whose status is in `statuses`, oldest first, each
    /// with the use this machine recorded.
    pub fn team_memories_with_use(
        &self,
        project: &ProjectId,
        statuses: &[MemoryStatus],
    ) -> Result<Vec<UsedMemory>> {
        const DOING: &str = "reading cached team memories with their use";
        let mut statement = self
            .conn()
            .prepare_cached(&format!(
                "SELECT {COLUMNS}, retrievals, last_retrieved_ms FROM (
                   SELECT m.*, COALESCE(u.retrievals, 0) AS retrievals, u.last_retrieved_ms
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
                        last_restated_ms: None,
                        recorded_from_ms: None,
                    },
                })
            })
            .map_err(StoreError::sqlite(DOING))?;
        with_status(rows, statuses, DOING)
    }
}

impl WriteTx<'_> {
    /// Records that a search returned the project's cached team memories `ids` at `now_ms`;
    /// ids the cache does not hold for the project are ignored. Returns how many were
    /// counted.
    pub fn record_team_memory_retrievals(
        &self,
        project: &ProjectId,
        ids: &[u64],
        now_ms: i64,
    ) -> Result<u64> {
        const DOING: &str = "recording that a search returned a team memory";
        let mut statement = self
            .conn()
            .prepare_cached(
                "INSERT INTO team_memory_use (project_id, id, retrievals, last_retrieved_ms)
                 SELECT project_id, id, 1, ?3 FROM team_memories
                 WHERE project_id = ?1 AND id = ?2
                 ON CONFLICT (project_id, id) DO UPDATE SET
                   retrievals = retrievals + 1,
                   last_retrieved_ms = MAX(last_retrieved_ms, excluded.last_retrieved_ms)",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let mut counted = 0;
        for id in ids {
            counted += statement
                .execute(rusqlite::params![project.as_str(), id, now_ms])
                .map_err(StoreError::sqlite(DOING))? as u64;
        }
        Ok(counted)
    }
}
