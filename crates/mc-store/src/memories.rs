//! Project memory (schema v9): facts of one project in the five categories, and the log of
//! every change to them.
//!
//! Every method takes the project it acts in, and a memory of another project is reported as
//! not found: one store serves every project on the machine, and a project's head must never
//! show another's facts. Restatements are merged by their normalised key
//! ([`fact_key`]), counted in `seen_count` rather than stored twice. Each added, changed,
//! superseded or archived memory writes one log row in the caller's transaction, so the
//! change and its record land together; the head's delta reads the log past the last id it
//! showed. A merge only counts a repeat and changes nothing the model sees, so it is not
//! logged.

use mc_core::ProjectId;
use mc_core::head::MemoryCategory;
use mc_core::historian::fact_key;
use rusqlite::OptionalExtension;
use rusqlite::types::Type;

use crate::error::{Result, StoreError};
use crate::historian_rows::history_scope_of_project;
use crate::store::{ReadTx, WriteTx};

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
stored_names!(MemorySource { Operator => "operator", Agent => "agent", Historian => "historian" });
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
}

const COLUMNS: &str =
    "id, category, content, status, source, seen_count, created_ms, updated_ms, superseded_by";

/// A stored name no variant of `T` has: the file was written by a newer binary or by hand.
#[derive(Debug, thiserror::Error)]
#[error("unknown stored name `{0}`")]
struct UnknownName(String);

fn named<T>(
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

fn memory_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredMemory> {
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

/// The key a memory's content is merged by; empty content is refused.
fn key_of(content: &str) -> Result<String> {
    let key = fact_key(content);
    if key.is_empty() {
        return Err(StoreError::EmptyMemory);
    }
    Ok(key)
}

impl ReadTx<'_> {
    /// The project's memories whose status is in `statuses`, oldest first.
    pub fn memories(
        &self,
        project: &ProjectId,
        statuses: &[MemoryStatus],
    ) -> Result<Vec<StoredMemory>> {
        const DOING: &str = "reading memories";
        let mut statement = self
            .conn()
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM memories WHERE project_id = ?1 ORDER BY id"
            ))
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([project.as_str()], memory_from_row)
            .map_err(StoreError::sqlite(DOING))?;
        let mut memories = Vec::new();
        for row in rows {
            let memory = row.map_err(StoreError::sqlite(DOING))?;
            if statuses.contains(&memory.record.status) {
                memories.push(memory);
            }
        }
        Ok(memories)
    }

    /// The project's memory `id`, or `None` when the project has no such memory.
    pub fn memory(&self, project: &ProjectId, id: u64) -> Result<Option<StoredMemory>> {
        self.conn()
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM memories WHERE project_id = ?1 AND id = ?2"
            ))
            .and_then(|mut statement| {
                statement
                    .query_row(rusqlite::params![project.as_str(), id], memory_from_row)
                    .optional()
            })
            .map_err(StoreError::sqlite("reading a memory"))
    }

    /// The project's changes logged after log id `after` (0 for all), oldest first.
    pub fn memory_log_since(&self, project: &ProjectId, after: u64) -> Result<Vec<MemoryLogEntry>> {
        const DOING: &str = "reading the memory log";
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT id, memory_id, action, at_ms, detail FROM memory_log
                 WHERE project_id = ?1 AND id > ?2 ORDER BY id",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map(rusqlite::params![project.as_str(), after], |row| {
                Ok(MemoryLogEntry {
                    id: row.get(0)?,
                    memory_id: row.get(1)?,
                    action: named(row, 2, MemoryAction::parse)?,
                    at_ms: row.get(3)?,
                    detail: row.get(4)?,
                })
            })
            .map_err(StoreError::sqlite(DOING))?;
        rows.map(|row| row.map_err(StoreError::sqlite(DOING)))
            .collect()
    }

    /// The id of the project's live (not archived) memory with this key.
    fn live_memory_with_key(&self, project: &ProjectId, key: &str) -> Result<Option<u64>> {
        self.conn()
            .prepare_cached(
                "SELECT id FROM memories
                 WHERE project_id = ?1 AND content_key = ?2 AND status <> 'archived'",
            )
            .and_then(|mut statement| {
                statement
                    .query_row([project.as_str(), key], |row| row.get(0))
                    .optional()
            })
            .map_err(StoreError::sqlite("looking up a memory by its key"))
    }

    /// Whether the project has ever retired a memory with this key.
    fn has_archived_key(&self, project: &ProjectId, key: &str) -> Result<bool> {
        self.conn()
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM memories
                 WHERE project_id = ?1 AND content_key = ?2 AND status = 'archived')",
            )
            .and_then(|mut statement| {
                statement.query_row([project.as_str(), key], |row| row.get(0))
            })
            .map_err(StoreError::sqlite("looking up an archived memory"))
    }

    /// The project's memory `id`, or [`StoreError::UnknownMemory`].
    fn require_memory(&self, project: &ProjectId, id: u64) -> Result<StoredMemory> {
        self.memory(project, id)?
            .ok_or_else(|| StoreError::UnknownMemory {
                project: project.to_string(),
                id,
            })
    }
}

impl WriteTx<'_> {
    /// Adds a memory to the project, or counts it as seen again when a live memory already
    /// says the same thing (same normalised key), whatever its category.
    pub fn add_memory(
        &self,
        project: &ProjectId,
        memory: &NewMemory<'_>,
        now_ms: i64,
    ) -> Result<Added> {
        let key = key_of(memory.content)?;
        if let Some(id) = self.live_memory_with_key(project, &key)? {
            self.conn()
                .prepare_cached("UPDATE memories SET seen_count = seen_count + 1 WHERE id = ?1")
                .and_then(|mut statement| statement.execute([id]))
                .map_err(StoreError::sqlite("counting a repeated memory"))?;
            return Ok(Added::Merged(id));
        }
        let record = MemoryRecord {
            category: memory.category,
            content: memory.content.trim().to_owned(),
            status: if memory.permanent {
                MemoryStatus::Permanent
            } else {
                MemoryStatus::Active
            },
            source: memory.source,
            seen_count: 1,
            created_ms: now_ms,
            updated_ms: now_ms,
        };
        let id = self.insert_memory(project, &key, &record)?;
        self.log_memory(
            project,
            id,
            MemoryAction::Added,
            now_ms,
            Some(memory.source.as_str()),
        )?;
        Ok(Added::New(id))
    }

    /// Stores a memory exported from another store as it was (status, source, count, times).
    /// Importing the same export twice changes nothing: a live memory with the same key keeps
    /// its row and takes the larger count; a retired one already holding the same wording is
    /// left alone.
    pub fn import_memory(
        &self,
        project: &ProjectId,
        record: &MemoryRecord,
        now_ms: i64,
    ) -> Result<Added> {
        let key = key_of(&record.content)?;
        if record.status != MemoryStatus::Archived {
            if let Some(id) = self.live_memory_with_key(project, &key)? {
                self.conn()
                    .prepare_cached(
                        "UPDATE memories SET seen_count = MAX(seen_count, ?2) WHERE id = ?1",
                    )
                    .and_then(|mut statement| {
                        statement.execute(rusqlite::params![id, record.seen_count])
                    })
                    .map_err(StoreError::sqlite("merging an imported memory"))?;
                return Ok(Added::Merged(id));
            }
        } else if let Some(id) = self.archived_twin(project, &key, &record.content)? {
            return Ok(Added::Merged(id));
        }
        let record = MemoryRecord {
            content: record.content.trim().to_owned(),
            ..record.clone()
        };
        let id = self.insert_memory(project, &key, &record)?;
        self.log_memory(project, id, MemoryAction::Added, now_ms, Some("imported"))?;
        Ok(Added::New(id))
    }

    /// Rewrites a live memory's content or category; logs `changed` when something did.
    pub fn edit_memory(
        &self,
        project: &ProjectId,
        id: u64,
        edit: MemoryEdit<'_>,
        now_ms: i64,
    ) -> Result<StoredMemory> {
        let mut memory = self.require_memory(project, id)?;
        if memory.record.status == MemoryStatus::Archived {
            return Err(StoreError::MemoryRefused {
                id,
                reason: "it is archived; add the fact again instead",
            });
        }
        let mut changes = Vec::new();
        if let Some(content) = edit.content.map(str::trim)
            && content != memory.record.content
        {
            let key = key_of(content)?;
            if let Some(existing) = self.live_memory_with_key(project, &key)?
                && existing != id
            {
                return Err(StoreError::DuplicateMemory {
                    project: project.to_string(),
                    id,
                    existing,
                });
            }
            memory.record.content = content.to_owned();
            changes.push("content".to_owned());
        }
        if let Some(category) = edit.category
            && category != memory.record.category
        {
            changes.push(format!(
                "category {} -> {}",
                memory.record.category.as_str(),
                category.as_str()
            ));
            memory.record.category = category;
        }
        if changes.is_empty() {
            return Ok(memory);
        }
        memory.record.updated_ms = now_ms;
        self.conn()
            .prepare_cached(
                "UPDATE memories SET category = ?2, content = ?3, content_key = ?4,
                   updated_ms = ?5 WHERE id = ?1",
            )
            .and_then(|mut statement| {
                statement.execute(rusqlite::params![
                    id,
                    memory.record.category.as_str(),
                    memory.record.content,
                    fact_key(&memory.record.content),
                    now_ms
                ])
            })
            .map_err(StoreError::sqlite("editing a memory"))?;
        self.log_memory(
            project,
            id,
            MemoryAction::Changed,
            now_ms,
            Some(&changes.join(", ")),
        )?;
        Ok(memory)
    }

    /// Retires a live memory; logs `archived`.
    pub fn archive_memory(
        &self,
        project: &ProjectId,
        id: u64,
        now_ms: i64,
    ) -> Result<StoredMemory> {
        let memory = self.require_memory(project, id)?;
        if memory.record.status == MemoryStatus::Archived {
            return Err(StoreError::MemoryRefused {
                id,
                reason: "it is already archived",
            });
        }
        self.retire(id, None, now_ms)?;
        self.log_memory(project, id, MemoryAction::Archived, now_ms, None)?;
        self.require_memory(project, id)
    }

    /// Replaces live memory `old` by live memory `by` of the same project: `old` is retired
    /// and names its successor; logs `superseded` on `old`.
    pub fn supersede_memory(
        &self,
        project: &ProjectId,
        old: u64,
        by: u64,
        now_ms: i64,
    ) -> Result<StoredMemory> {
        let retired = self.require_memory(project, old)?;
        let successor = self.require_memory(project, by)?;
        if old == by {
            return Err(StoreError::MemoryRefused {
                id: old,
                reason: "a memory cannot supersede itself",
            });
        }
        if retired.record.status == MemoryStatus::Archived
            || successor.record.status == MemoryStatus::Archived
        {
            return Err(StoreError::MemoryRefused {
                id: old,
                reason: "both it and its successor must be live, not archived",
            });
        }
        self.retire(old, Some(by), now_ms)?;
        let detail = format!("by {by}");
        self.log_memory(
            project,
            old,
            MemoryAction::Superseded,
            now_ms,
            Some(&detail),
        )?;
        self.require_memory(project, old)
    }

    /// Turns the facts the historian stored for the project into `historian` memories.
    /// A fact a live memory already states raises its count to the historian's; a fact the
    /// project retired is not brought back. Returns how many memories were added; running it
    /// again adds none.
    pub fn promote_historian_facts(&self, project: &ProjectId, now_ms: i64) -> Result<u64> {
        let facts = self.historian_facts(&history_scope_of_project(project.as_str()))?;
        let mut added = 0;
        for fact in facts {
            let Ok(key) = key_of(&fact.content) else {
                continue;
            };
            if let Some(id) = self.live_memory_with_key(project, &key)? {
                self.conn()
                    .prepare_cached(
                        "UPDATE memories SET seen_count = MAX(seen_count, ?2) WHERE id = ?1",
                    )
                    .and_then(|mut statement| {
                        statement.execute(rusqlite::params![id, fact.seen_count])
                    })
                    .map_err(StoreError::sqlite("counting a promoted fact"))?;
                continue;
            }
            if self.has_archived_key(project, &key)? {
                continue;
            }
            let record = MemoryRecord {
                category: fact.category,
                content: fact.content.trim().to_owned(),
                status: MemoryStatus::Active,
                source: MemorySource::Historian,
                seen_count: fact.seen_count,
                created_ms: fact.first_ms,
                updated_ms: fact.last_ms,
            };
            let id = self.insert_memory(project, &key, &record)?;
            self.log_memory(project, id, MemoryAction::Added, now_ms, Some("historian"))?;
            added += 1;
        }
        Ok(added)
    }

    /// A retired memory of the project with exactly this key and wording.
    fn archived_twin(&self, project: &ProjectId, key: &str, content: &str) -> Result<Option<u64>> {
        self.conn()
            .prepare_cached(
                "SELECT id FROM memories WHERE project_id = ?1 AND content_key = ?2
                   AND content = ?3 AND status = 'archived' ORDER BY id LIMIT 1",
            )
            .and_then(|mut statement| {
                statement
                    .query_row([project.as_str(), key, content.trim()], |row| row.get(0))
                    .optional()
            })
            .map_err(StoreError::sqlite("looking up an archived memory"))
    }

    fn insert_memory(&self, project: &ProjectId, key: &str, record: &MemoryRecord) -> Result<u64> {
        self.conn()
            .prepare_cached(
                "INSERT INTO memories (project_id, category, content, content_key, status,
                   seen_count, source, created_ms, updated_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING id",
            )
            .and_then(|mut statement| {
                statement.query_row(
                    rusqlite::params![
                        project.as_str(),
                        record.category.as_str(),
                        record.content,
                        key,
                        record.status.as_str(),
                        record.seen_count.max(1),
                        record.source.as_str(),
                        record.created_ms,
                        record.updated_ms,
                    ],
                    |row| row.get(0),
                )
            })
            .map_err(StoreError::sqlite("adding a memory"))
    }

    fn retire(&self, id: u64, by: Option<u64>, now_ms: i64) -> Result<()> {
        self.conn()
            .prepare_cached(
                "UPDATE memories SET status = 'archived', superseded_by = ?2, updated_ms = ?3
                 WHERE id = ?1",
            )
            .and_then(|mut statement| statement.execute(rusqlite::params![id, by, now_ms]))
            .map(|_| ())
            .map_err(StoreError::sqlite("archiving a memory"))
    }

    fn log_memory(
        &self,
        project: &ProjectId,
        memory_id: u64,
        action: MemoryAction,
        at_ms: i64,
        detail: Option<&str>,
    ) -> Result<()> {
        self.conn()
            .prepare_cached(
                "INSERT INTO memory_log (project_id, memory_id, action, at_ms, detail)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut statement| {
                statement.execute(rusqlite::params![
                    project.as_str(),
                    memory_id,
                    action.as_str(),
                    at_ms,
                    detail
                ])
            })
            .map(|_| ())
            .map_err(StoreError::sqlite("logging a memory change"))
    }
}
