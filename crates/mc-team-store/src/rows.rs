//! Decoding the team store's rows into the local store's memory types, so the engine sees
//! the same values whichever store it reads.

use mc_core::head::MemoryCategory;
use mc_store::{
    MemoryAction, MemoryLogEntry, MemoryRecord, MemorySource, MemoryStatus, StoredMemory,
};
use tokio_postgres::Row;

use crate::error::{Result, TeamStoreError};

/// The columns [`memory_of`] reads, in order.
pub(crate) const MEMORY_COLUMNS: &str = "id, category, content, status, source, seen_count, \
     created_ms, updated_ms, superseded_by, version";

/// The columns [`log_entry_of`] reads, in order.
pub(crate) const LOG_COLUMNS: &str = "version, memory_id, action, at_ms, detail, actor, task";

fn named<T>(what: &'static str, value: String, parse: impl Fn(&str) -> Option<T>) -> Result<T> {
    parse(&value).ok_or(TeamStoreError::CorruptRow { what, value })
}

/// A `bigint` id or count as ours (a negative one, which we never write, as 0).
pub(crate) fn id(value: i64) -> u64 {
    u64::try_from(value).unwrap_or_default()
}

/// A memory row and its version.
pub(crate) fn memory_of(row: &Row) -> Result<(StoredMemory, u64)> {
    let memory = StoredMemory {
        id: id(row.get(0)),
        record: MemoryRecord {
            category: named("category", row.get(1), MemoryCategory::parse)?,
            content: row.get(2),
            status: named("status", row.get(3), MemoryStatus::parse)?,
            source: named("source", row.get(4), MemorySource::parse)?,
            seen_count: id(row.get(5)),
            created_ms: row.get(6),
            updated_ms: row.get(7),
        },
        superseded_by: row.get::<_, Option<i64>>(8).map(id),
    };
    Ok((memory, id(row.get(9))))
}

/// A log row; its id is the team store's version.
pub(crate) fn log_entry_of(row: &Row) -> Result<MemoryLogEntry> {
    Ok(MemoryLogEntry {
        id: id(row.get(0)),
        memory_id: id(row.get(1)),
        action: named("action", row.get(2), MemoryAction::parse)?,
        at_ms: row.get(3),
        detail: row.get(4),
        actor: match row.get::<_, Option<String>>(5) {
            Some(name) => Some(named("actor", name, MemorySource::parse)?),
            None => None,
        },
        task: row.get(6),
    })
}

/// An id as PostgreSQL stores it (`bigint`); ids beyond it are no id of ours.
pub(crate) fn pg_id(id: u64) -> i64 {
    i64::try_from(id).unwrap_or(i64::MAX)
}
