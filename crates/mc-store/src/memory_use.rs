//! When each memory was last of use (schema v25): returned by a search, or stated again.
//!
//! Maintenance retires a memory nothing has needed for a long time, and needs to tell such a
//! memory from one the agent keeps finding. A search that returns a memory counts as use
//! ([`WriteTx::record_memory_retrievals`]); a restatement (the agent or operator adding the
//! same fact, the historian finding it in a session again) moves `last_restated_ms`. Both
//! only ever move forwards, so a late or replayed write cannot make a memory look older than
//! it is. Being rendered into `m[0]` is deliberately not use (see the migration).

use mc_core::ProjectId;
use rusqlite::OptionalExtension;

use crate::error::{Result, StoreError};
use crate::memory_rows::{COLUMNS, MemoryStatus, StoredMemory, memory_from_row};
use crate::store::{ReadTx, WriteTx};

/// What a memory was used for, as recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryUse {
    /// How many searches returned it.
    pub retrievals: u64,
    /// When a search last returned it, unix milliseconds.
    pub last_retrieved_ms: Option<i64>,
    /// When its fact was last stated again, unix milliseconds.
    pub last_restated_ms: Option<i64>,
    /// For a memory stored before use was recorded (schema v25), when the recording began:
    /// it may have been used any time before, so it counts as used then.
    pub recorded_from_ms: Option<i64>,
}

/// A memory with its use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsedMemory {
    /// The memory.
    pub memory: StoredMemory,
    /// Its use.
    pub used: MemoryUse,
}

impl UsedMemory {
    /// The last time anything touched the memory, unix milliseconds: stored, changed,
    /// returned by a search or stated again (or, stored before use was recorded, when the
    /// recording began), whichever is latest.
    pub fn last_touched_ms(&self) -> i64 {
        let record = &self.memory.record;
        [
            Some(record.created_ms),
            Some(record.updated_ms),
            self.used.last_retrieved_ms,
            self.used.last_restated_ms,
            self.used.recorded_from_ms,
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(record.created_ms)
    }
}

const USE_COLUMNS: &str = "retrievals, last_retrieved_ms, last_restated_ms, use_recorded_from_ms";

fn used_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<UsedMemory> {
    Ok(UsedMemory {
        memory: memory_from_row(row)?,
        used: MemoryUse {
            retrievals: row.get(9)?,
            last_retrieved_ms: row.get(10)?,
            last_restated_ms: row.get(11)?,
            recorded_from_ms: row.get(12)?,
        },
    })
}

/// The memories of `rows` whose status is in `statuses`.
pub(crate) fn with_status(
    rows: impl Iterator<Item = rusqlite::Result<UsedMemory>>,
    statuses: &[MemoryStatus],
    doing: &'static str,
) -> Result<Vec<UsedMemory>> {
    let mut memories = Vec::new();
    for row in rows {
        let used = row.map_err(StoreError::sqlite(doing))?;
        if statuses.contains(&used.memory.record.status) {
            memories.push(used);
        }
    }
    Ok(memories)
}

impl ReadTx<'_> {
    /// The project's memories whose status is in `statuses`, oldest first, each with its use.
    pub fn memories_with_use(
        &self,
        project: &ProjectId,
        statuses: &[MemoryStatus],
    ) -> Result<Vec<UsedMemory>> {
        const DOING: &str = "reading memories with their use";
        let mut statement = self
            .conn()
            .prepare_cached(&format!(
                "SELECT {COLUMNS}, {USE_COLUMNS} FROM memories WHERE project_id = ?1 ORDER BY id"
            ))
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([project.as_str()], used_from_row)
            .map_err(StoreError::sqlite(DOING))?;
        with_status(rows, statuses, DOING)
    }

    /// The project's memory `id` with its use, or `None` when the project has no such memory.
    pub fn memory_with_use(&self, project: &ProjectId, id: u64) -> Result<Option<UsedMemory>> {
        self.conn()
            .prepare_cached(&format!(
                "SELECT {COLUMNS}, {USE_COLUMNS} FROM memories WHERE project_id = ?1 AND id = ?2"
            ))
            .and_then(|mut statement| {
                statement
                    .query_row(rusqlite::params![project.as_str(), id], used_from_row)
                    .optional()
            })
            .map_err(StoreError::sqlite("reading a memory with its use"))
    }
}

impl WriteTx<'_> {
    /// Records that a search returned the project's memories `ids` at `now_ms`; ids of
    /// another project are ignored. Returns how many memories were counted.
    pub fn record_memory_retrievals(
        &self,
        project: &ProjectId,
        ids: &[u64],
        now_ms: i64,
    ) -> Result<u64> {
        const DOING: &str = "recording that a search returned a memory";
        let mut statement = self
            .conn()
            .prepare_cached(
                "UPDATE memories SET retrievals = retrievals + 1,
                   last_retrieved_ms = MAX(COALESCE(last_retrieved_ms, ?3), ?3)
                 WHERE project_id = ?1 AND id = ?2",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let mut counted = 0;
        for id in ids {
            let changed = statement
                .execute(rusqlite::params![project.as_str(), id, now_ms])
                .map_err(StoreError::sqlite(DOING))?;
            counted += changed as u64;
        }
        Ok(counted)
    }

    /// Records that memory `id`'s fact was stated again at `at_ms`.
    pub(crate) fn note_restated(&self, id: u64, at_ms: i64) -> Result<()> {
        self.conn()
            .prepare_cached(
                "UPDATE memories SET last_restated_ms = MAX(COALESCE(last_restated_ms, ?2), ?2)
                 WHERE id = ?1",
            )
            .and_then(|mut statement| statement.execute(rusqlite::params![id, at_ms]))
            .map(|_| ())
            .map_err(StoreError::sqlite("recording a restated memory"))
    }
}
