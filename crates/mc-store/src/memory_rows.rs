//! The rows of project memory (schema v9): statuses, sources, log actions, what is stored
//! and read back, and how a row decodes. The repository over them is `memories.rs`.

use mc_core::head::MemoryCategory;
use mc_core::historian::fact_key;
use rusqlite::types::Type;

use crate::error::{Result, StoreError};

/// Whether a memory is shown, kept for good, or retired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryStatus {
    /// Shown in the head; maintenance may archive it when it goes stale.
    Active,
    /// Shown in the head and never archived by maintenance, only by the operator.
    Permanent,
    /// Retired (archived, or superseded by another memory); kept for the log and lineage.
    Archived,
}

/// Who wrote a memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemorySource {
    /// The operator, through the command line or an import.
    Operator,
    /// The agent, through its memory tool.
    Agent,
    /// Promoted from the facts the historian found in the project's sessions.
    Historian,
    /// The dreamer's maintenance. Only ever a log actor: the dreamer changes, merges and
    /// retires memories but never writes one of its own, and the schema refuses it as a
    /// memory's source.
    Dreamer,
}

/// What a log row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryAction {
    /// A new memory.
    Added,
    /// Its content or category was rewritten.
    Changed,
    /// It was replaced by another memory (`superseded_by`).
    Superseded,
    /// It was retired.
    Archived,
}

/// Names as stored, so the `CHECK` constraints of the schema and the parsers agree.
macro_rules! stored_names {
    ($type:ident { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $type {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The name as stored and printed.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $name),+
                }
            }

            /// The value a stored or typed name stands for.
            pub fn parse(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|value| value.as_str() == name)
            }
        }
    };
}

stored_names!(MemoryStatus { Active => "active", Permanent => "permanent", Archived => "archived" });
stored_names!(MemorySource {
    Operator => "operator",
    Agent => "agent",
    Historian => "historian",
    Dreamer => "dreamer",
});
stored_names!(MemoryAction {
    Added => "added",
    Changed => "changed",
    Superseded => "superseded",
    Archived => "archived",
});

/// What a memory says and where it stands, without its store id: the part an export carries
/// from one store to another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryRecord {
    /// The category it is grouped under.
    pub category: MemoryCategory,
    /// The fact, trimmed.
    pub content: String,
    /// Shown, kept for good, or retired.
    pub status: MemoryStatus,
    /// Who wrote it.
    pub source: MemorySource,
    /// How many times it was stated (merged restatements count).
    pub seen_count: u64,
    /// When it was first stored, unix milliseconds.
    pub created_ms: i64,
    /// When its content, category or status last changed, unix milliseconds.
    pub updated_ms: i64,
}

impl MemoryRecord {
    /// The record as one line of a memory export (`memory export`, the dashboard's export):
    /// `category`, `content`, `status`, `source`, `seen_count`, `created_ms`, `updated_ms`,
    /// in that order, as `memory import` reads them.
    pub fn export_line(&self) -> String {
        serde_json::json!({
            "category": self.category.as_str(),
            "content": self.content,
            "status": self.status.as_str(),
            "source": self.source.as_str(),
            "seen_count": self.seen_count,
            "created_ms": self.created_ms,
            "updated_ms": self.updated_ms,
        })
        .to_string()
    }
}

/// A memory as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMemory {
    /// The store's id; larger is newer.
    pub id: u64,
    /// What it says and where it stands.
    pub record: MemoryRecord,
    /// The memory that replaced it, once superseded.
    pub superseded_by: Option<u64>,
}

/// A memory to add.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewMemory<'a> {
    /// Its category.
    pub category: MemoryCategory,
    /// The fact; surrounding whitespace is trimmed.
    pub content: &'a str,
    /// Who writes it.
    pub source: MemorySource,
    /// Kept for good (`Permanent`) rather than `Active`: a new memory is never archived.
    pub permanent: bool,
}

/// What adding a memory did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// A new memory with this id.
    New(u64),
    /// A live memory with this id already said it; it was counted as seen again.
    Merged(u64),
}

impl Added {
    /// The id of the memory that holds the fact now.
    pub fn id(self) -> u64 {
        match self {
            Self::New(id) | Self::Merged(id) => id,
        }
    }
}

/// A rewrite of a memory: what is `None` stays as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryEdit<'a> {
    /// The new category.
    pub category: Option<MemoryCategory>,
    /// The new wording.
    pub content: Option<&'a str>,
}

/// One change to a project's memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryLogEntry {
    /// The log's id; the head's delta reads past the last one it showed.
    pub id: u64,
    /// The memory changed.
    pub memory_id: u64,
    /// What happened to it.
    pub action: MemoryAction,
    /// When, unix milliseconds.
    pub at_ms: i64,
    /// Who added it, what an edit changed, or which memory superseded it.
    pub detail: Option<String>,
    /// Who made the change (`None` in rows logged before this was recorded). An operator's
    /// change made outside any session is the one memory change that rebuilds `m[0]`.
    pub actor: Option<MemorySource>,
    /// The dreamer task that made the change (`verify_memories`, ...); `None` for every
    /// other actor.
    pub task: Option<String>,
}

pub(crate) const COLUMNS: &str =
    "id, category, content, status, source, seen_count, created_ms, updated_ms, superseded_by";

/// A stored name no variant of `T` has: the file was written by a newer binary or by hand.
#[derive(Debug, thiserror::Error)]
#[error("unknown stored name `{0}`")]
struct UnknownName(String);

pub(crate) fn named<T>(
    row: &rusqlite::Row<'_>,
    index: usize,
    parse: fn(&str) -> Option<T>,
) -> rusqlite::Result<T> {
    let name: String = row.get(index)?;
    parse(&name).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(index, Type::Text, Box::new(UnknownName(name)))
    })
}

fn category_named(name: &str) -> Option<MemoryCategory> {
    MemoryCategory::ALL
        .into_iter()
        .find(|category| category.as_str() == name)
}

pub(crate) fn memory_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredMemory> {
    Ok(StoredMemory {
        id: row.get(0)?,
        record: MemoryRecord {
            category: named(row, 1, category_named)?,
            content: row.get(2)?,
            status: named(row, 3, MemoryStatus::parse)?,
            source: named(row, 4, MemorySource::parse)?,
            seen_count: row.get(5)?,
            created_ms: row.get(6)?,
            updated_ms: row.get(7)?,
        },
        superseded_by: row.get(8)?,
    })
}

/// The memories `sql` selects ([`COLUMNS`], the project bound as ?1) whose status is in
/// `statuses`: the local table's and the team cache's reads share this.
pub(crate) fn memories_with_status(
    conn: &rusqlite::Connection,
    sql: &str,
    doing: &'static str,
    project: &str,
    statuses: &[MemoryStatus],
) -> Result<Vec<StoredMemory>> {
    let mut statement = conn
        .prepare_cached(sql)
        .map_err(StoreError::sqlite(doing))?;
    let rows = statement
        .query_map([project], memory_from_row)
        .map_err(StoreError::sqlite(doing))?;
    let mut memories = Vec::new();
    for row in rows {
        let memory = row.map_err(StoreError::sqlite(doing))?;
        if statuses.contains(&memory.record.status) {
            memories.push(memory);
        }
    }
    Ok(memories)
}

/// The log rows `sql` selects (the project bound as ?1, the cursor as ?2).
pub(crate) fn log_entries(
    conn: &rusqlite::Connection,
    sql: &str,
    doing: &'static str,
    project: &str,
    after: u64,
) -> Result<Vec<MemoryLogEntry>> {
    let mut statement = conn
        .prepare_cached(sql)
        .map_err(StoreError::sqlite(doing))?;
    let rows = statement
        .query_map(rusqlite::params![project, after], log_entry_from_row)
        .map_err(StoreError::sqlite(doing))?;
    rows.map(|row| row.map_err(StoreError::sqlite(doing)))
        .collect()
}

/// A log row read as `id, memory_id, action, at_ms, detail, actor, task`.
pub(crate) fn log_entry_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<MemoryLogEntry> {
    Ok(MemoryLogEntry {
        id: row.get(0)?,
        memory_id: row.get(1)?,
        action: named(row, 2, MemoryAction::parse)?,
        at_ms: row.get(3)?,
        detail: row.get(4)?,
        actor: match row.get::<_, Option<String>>(5)? {
            Some(name) => MemorySource::parse(&name),
            None => None,
        },
        task: row.get(6)?,
    })
}

/// The key a memory's content is merged by; empty content is refused.
pub(crate) fn key_of(content: &str) -> Result<String> {
    let key = fact_key(content);
    if key.is_empty() {
        return Err(StoreError::EmptyMemory);
    }
    Ok(key)
}
