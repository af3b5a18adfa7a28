//! The durable queue of writes bound for a team store (schema v26).
//!
//! A change of project knowledge made while the team store is unreachable must neither fail
//! the request nor be lost: it is queued here, in the same SQLite file as everything else,
//! and replayed oldest first when the server answers again. Each queued write keeps the write
//! id it was given when queued; the server records the ids it applied, so a write sent twice
//! (the answer was lost, the process died between sending and forgetting it) lands once.

use mc_core::ProjectId;
use mc_core::head::MemoryCategory;
use rusqlite::types::Type;

use crate::error::{Result, StoreError};
use crate::memory_rows::{MemorySource, named};
use crate::store::{ReadTx, WriteTx};

/// One change to a project's memories, as queued and as sent to the team store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TeamWrite {
    /// Add a memory, or count a live one with the same key seen again.
    Add {
        /// Its category.
        category: MemoryCategory,
        /// The fact.
        content: String,
        /// Who wrote it.
        source: MemorySource,
        /// Kept for good.
        permanent: bool,
    },
    /// Rewrite a live memory's wording or category.
    Edit {
        /// The memory.
        id: u64,
        /// The new category.
        category: Option<MemoryCategory>,
        /// The new wording.
        content: Option<String>,
        /// Who changed it.
        actor: MemorySource,
    },
    /// Retire a live memory.
    Archive {
        /// The memory.
        id: u64,
        /// Who retired it.
        actor: MemorySource,
    },
    /// Retire live memory `old` in favour of live memory `by`.
    Supersede {
        /// The memory retired.
        old: u64,
        /// Its successor.
        by: u64,
        /// Who merged them.
        actor: MemorySource,
    },
    /// A dreamer task's change, logged with the dreamer as actor and the task's name.
    Maintain(Maintenance),
}

/// A dreamer task's change to a team's memories.
///
/// The task decided from the text it read, maybe minutes before the write lands (a model
/// was asked meanwhile); an operator or agent on another machine may have changed the memory
/// since, and the lease does not keep them out. So the change carries what it read, and the
/// team store applies it only while every memory it names is still active and says exactly
/// that: a verdict about an old text never overwrites a newer one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Maintenance {
    /// What the change does.
    pub change: MaintenanceKind,
    /// The memories it names with the text the task read, the changed (or kept) one first;
    /// a merge retires every other one in favour of the first.
    pub seen: Vec<(u64, String)>,
    /// The task that made it (`verify_memories`, ...).
    pub task: String,
    /// Why, as the log shows it.
    pub reason: String,
}

/// What a maintenance change does to the memories it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MaintenanceKind {
    /// Retire the memory.
    Archive,
    /// Give the memory this text.
    Rewrite {
        /// The new text.
        content: String,
    },
    /// Keep the first memory with this text, retiring the others in its favour.
    Merge {
        /// The merged text.
        content: String,
    },
}

impl Maintenance {
    /// The memory the change is about (the kept one of a merge); 0 when it names none.
    pub fn memory_id(&self) -> u64 {
        self.seen.first().map_or(0, |(id, _)| *id)
    }

    /// The write id of this change made at `now_ms`: derived from what it is, so queuing
    /// the same decision twice queues it once, while the same change decided again later
    /// (the memory came back to the same text) is a write of its own.
    pub fn write_id(&self, project: &ProjectId, now_ms: i64) -> String {
        let mut hasher = blake3::Hasher::new();
        hasher.update(b"mc-dreamer-maintenance-v1\0");
        for part in [project.as_str(), self.task.as_str(), self.kind_name()] {
            hasher.update(part.as_bytes());
            hasher.update(b"\0");
        }
        if let MaintenanceKind::Rewrite { content } | MaintenanceKind::Merge { content } =
            &self.change
        {
            hasher.update(content.as_bytes());
            hasher.update(b"\0");
        }
        for (id, text) in &self.seen {
            hasher.update(&id.to_le_bytes());
            hasher.update(text.as_bytes());
            hasher.update(b"\0");
        }
        hasher.update(&now_ms.to_le_bytes());
        let hex = hasher.finalize().to_hex();
        format!("dreamer-{}", &hex[..32])
    }

    fn kind_name(&self) -> &'static str {
        match self.change {
            MaintenanceKind::Archive => "maintain_archive",
            MaintenanceKind::Rewrite { .. } => "maintain_rewrite",
            MaintenanceKind::Merge { .. } => "maintain_merge",
        }
    }
}

/// A write waiting in the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedTeamWrite {
    /// Its place in the queue (older is smaller).
    pub seq: u64,
    /// The id the server deduplicates by.
    pub write_id: String,
    /// The project it changes.
    pub project: ProjectId,
    /// The change.
    pub write: TeamWrite,
    /// When it was queued, unix milliseconds.
    pub queued_ms: i64,
    /// How many times sending it failed.
    pub attempts: u32,
}

/// Columns of a queued write, in the order [`TeamWrite`] is split into.
struct Columns<'a> {
    kind: &'static str,
    memory_id: Option<u64>,
    other_id: Option<u64>,
    category: Option<&'static str>,
    content: Option<&'a str>,
    actor: MemorySource,
    permanent: bool,
    task: Option<&'a str>,
    detail: Option<&'a str>,
    seen: Option<String>,
}

fn columns(write: &TeamWrite) -> Columns<'_> {
    match write {
        TeamWrite::Add {
            category,
            content,
            source,
            permanent,
        } => Columns {
            category: Some(category.as_str()),
            content: Some(content),
            actor: *source,
            permanent: *permanent,
            ..Columns::plain("add")
        },
        TeamWrite::Edit {
            id,
            category,
            content,
            actor,
        } => Columns {
            memory_id: Some(*id),
            category: category.map(MemoryCategory::as_str),
            content: content.as_deref(),
            actor: *actor,
            ..Columns::plain("edit")
        },
        TeamWrite::Archive { id, actor } => Columns {
            memory_id: Some(*id),
            actor: *actor,
            ..Columns::plain("archive")
        },
        TeamWrite::Supersede { old, by, actor } => Columns {
            memory_id: Some(*old),
            other_id: Some(*by),
            actor: *actor,
            ..Columns::plain("supersede")
        },
        TeamWrite::Maintain(maintenance) => Columns {
            memory_id: Some(maintenance.memory_id()),
            content: match &maintenance.change {
                MaintenanceKind::Archive => None,
                MaintenanceKind::Rewrite { content } | MaintenanceKind::Merge { content } => {
                    Some(content)
                }
            },
            actor: MemorySource::Dreamer,
            task: Some(&maintenance.task),
            detail: Some(&maintenance.reason),
            seen: Some(
                serde_json::Value::from(
                    maintenance
                        .seen
                        .iter()
                        .map(|(id, text)| serde_json::json!([id, text]))
                        .collect::<Vec<_>>(),
                )
                .to_string(),
            ),
            ..Columns::plain(maintenance.kind_name())
        },
    }
}

impl Columns<'_> {
    /// The columns of a write of `kind` that fills none of them yet.
    fn plain(kind: &'static str) -> Self {
        Self {
            kind,
            memory_id: None,
            other_id: None,
            category: None,
            content: None,
            actor: MemorySource::Operator,
            permanent: false,
            task: None,
            detail: None,
            seen: None,
        }
    }
}

/// The `seen` column read back: `[[id, text], …]`.
fn seen_of(json: &str) -> Option<Vec<(u64, String)>> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    value
        .as_array()?
        .iter()
        .map(|pair| Some((pair.get(0)?.as_u64()?, pair.get(1)?.as_str()?.to_owned())))
        .collect()
}

fn write_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<TeamWrite> {
    let kind: String = row.get(4)?;
    let memory_id: Option<u64> = row.get(5)?;
    let other_id: Option<u64> = row.get(6)?;
    let category = match row.get::<_, Option<String>>(7)? {
        Some(_) => Some(named(row, 7, MemoryCategory::parse)?),
        None => None,
    };
    let content: Option<String> = row.get(8)?;
    let actor = named(row, 9, MemorySource::parse)?;
    let permanent: bool = row.get(10)?;
    let missing = || rusqlite::Error::InvalidColumnType(5, kind.clone(), Type::Null);
    if let Some(change) = match kind.as_str() {
        "maintain_archive" => Some(MaintenanceKind::Archive),
        "maintain_rewrite" => Some(MaintenanceKind::Rewrite {
            content: content.clone().ok_or_else(missing)?,
        }),
        "maintain_merge" => Some(MaintenanceKind::Merge {
            content: content.clone().ok_or_else(missing)?,
        }),
        _ => None,
    } {
        let seen = row
            .get::<_, Option<String>>(13)?
            .as_deref()
            .and_then(seen_of)
            .ok_or_else(missing)?;
        return Ok(TeamWrite::Maintain(Maintenance {
            change,
            seen,
            task: row.get::<_, Option<String>>(12)?.ok_or_else(missing)?,
            reason: row.get::<_, Option<String>>(14)?.unwrap_or_default(),
        }));
    }
    Ok(match kind.as_str() {
        "add" => TeamWrite::Add {
            category: category.ok_or_else(missing)?,
            content: content.ok_or_else(missing)?,
            source: actor,
            permanent,
        },
        "edit" => TeamWrite::Edit {
            id: memory_id.ok_or_else(missing)?,
            category,
            content,
            actor,
        },
        "archive" => TeamWrite::Archive {
            id: memory_id.ok_or_else(missing)?,
            actor,
        },
        _ => TeamWrite::Supersede {
            old: memory_id.ok_or_else(missing)?,
            by: other_id.ok_or_else(missing)?,
            actor,
        },
    })
}

impl ReadTx<'_> {
    /// Up to `limit` queued writes, oldest first.
    pub fn queued_team_writes(&self, limit: u32) -> Result<Vec<QueuedTeamWrite>> {
        const DOING: &str = "reading queued team writes";
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT seq, write_id, project_id, queued_ms, kind, memory_id, other_id,
                   category, content, actor, permanent, attempts, task, seen, detail
                 FROM team_outbox ORDER BY seq LIMIT ?1",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([limit], |row| {
                let project = project_of(row, 2)?;
                Ok(QueuedTeamWrite {
                    seq: row.get(0)?,
                    write_id: row.get(1)?,
                    project,
                    write: write_of(row)?,
                    queued_ms: row.get(3)?,
                    attempts: row.get(11)?,
                })
            })
            .map_err(StoreError::sqlite(DOING))?;
        let queued = rows
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(StoreError::sqlite(DOING))?;
        Ok(queued)
    }

    /// How many writes wait, and when the oldest was queued.
    pub fn team_queue(&self) -> Result<(u64, Option<i64>)> {
        self.conn()
            .prepare_cached("SELECT COUNT(*), MIN(queued_ms) FROM team_outbox")
            .and_then(|mut statement| statement.query_row([], |row| Ok((row.get(0)?, row.get(1)?))))
            .map_err(StoreError::sqlite("counting queued team writes"))
    }
}

impl WriteTx<'_> {
    /// Queues `write` under `write_id`; queuing the same id again changes nothing.
    pub fn queue_team_write(
        &self,
        write_id: &str,
        project: &ProjectId,
        write: &TeamWrite,
        now_ms: i64,
    ) -> Result<()> {
        let columns = columns(write);
        self.conn()
            .prepare_cached(
                "INSERT OR IGNORE INTO team_outbox (write_id, project_id, kind, memory_id,
                   other_id, category, content, actor, permanent, queued_ms, task, detail, seen)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            )
            .and_then(|mut statement| {
                statement.execute(rusqlite::params![
                    write_id,
                    project.as_str(),
                    columns.kind,
                    columns.memory_id,
                    columns.other_id,
                    columns.category,
                    columns.content,
                    columns.actor.as_str(),
                    columns.permanent,
                    now_ms,
                    columns.task,
                    columns.detail,
                    columns.seen
                ])
            })
            .map(|_| ())
            .map_err(StoreError::sqlite("queuing a team write"))
    }

    /// Removes a write the server applied (or refused for good).
    pub fn forget_team_write(&self, write_id: &str) -> Result<()> {
        self.conn()
            .prepare_cached("DELETE FROM team_outbox WHERE write_id = ?1")
            .and_then(|mut statement| statement.execute([write_id]))
            .map(|_| ())
            .map_err(StoreError::sqlite("forgetting a team write"))
    }

    /// Records that sending a write failed; it stays queued.
    pub fn note_team_write_failure(&self, write_id: &str, error: &str) -> Result<()> {
        self.conn()
            .prepare_cached(
                "UPDATE team_outbox SET attempts = attempts + 1, last_error = ?2
                 WHERE write_id = ?1",
            )
            .and_then(|mut statement| statement.execute([write_id, error]))
            .map(|_| ())
            .map_err(StoreError::sqlite("recording a failed team write"))
    }
}

/// The project id in column `index` of a queue's row: a row that holds no valid id fails to
/// convert, like any other column of the wrong type.
pub(crate) fn project_of(row: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<ProjectId> {
    ProjectId::new(row.get::<_, String>(index)?).map_err(|error| {
        rusqlite::Error::FromSqlConversionFailure(index, Type::Text, Box::new(error))
    })
}
