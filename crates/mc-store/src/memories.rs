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
use mc_core::historian::fact_key;
use rusqlite::OptionalExtension;

use crate::error::{Result, StoreError};
use crate::historian_rows::history_scope_of_project;
use crate::memory_rows::{
    Added, COLUMNS, MemoryAction, MemoryEdit, MemoryLogEntry, MemoryRecord, MemorySource,
    MemoryStatus, NewMemory, StoredMemory, key_of, log_entries, memories_with_status,
    memory_from_row,
};
use crate::store::{ReadTx, WriteTx};

impl ReadTx<'_> {
    /// The project's memories whose status is in `statuses`, oldest first.
    pub fn memories(
        &self,
        project: &ProjectId,
        statuses: &[MemoryStatus],
    ) -> Result<Vec<StoredMemory>> {
        memories_with_status(
            self.conn(),
            &format!("SELECT {COLUMNS} FROM memories WHERE project_id = ?1 ORDER BY id"),
            "reading memories",
            project.as_str(),
            statuses,
        )
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
        log_entries(
            self.conn(),
            "SELECT id, memory_id, action, at_ms, detail, actor, task FROM memory_log
             WHERE project_id = ?1 AND id > ?2 ORDER BY id",
            "reading the memory log",
            project.as_str(),
            after,
        )
    }

    /// The id of the project's newest memory log entry (0 when it has none): where a head
    /// rendered now stands in the log.
    pub fn memory_log_head(&self, project: &ProjectId) -> Result<u64> {
        self.conn()
            .prepare_cached("SELECT COALESCE(MAX(id), 0) FROM memory_log WHERE project_id = ?1")
            .and_then(|mut statement| statement.query_row([project.as_str()], |row| row.get(0)))
            .map_err(StoreError::sqlite("reading the memory log"))
    }

    /// The id of the project's live (not archived) memory with this key.
    pub(crate) fn live_memory_with_key(
        &self,
        project: &ProjectId,
        key: &str,
    ) -> Result<Option<u64>> {
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
    pub(crate) fn require_memory(&self, project: &ProjectId, id: u64) -> Result<StoredMemory> {
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
            self.note_restated(id, now_ms)?;
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
            memory.source,
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
        self.log_memory(
            project,
            id,
            MemoryAction::Added,
            MemorySource::Operator,
            now_ms,
            Some("imported"),
        )?;
        Ok(Added::New(id))
    }

    /// Rewrites a live memory's content or category; logs `changed` when something did.
    pub fn edit_memory(
        &self,
        project: &ProjectId,
        id: u64,
        edit: MemoryEdit<'_>,
        actor: MemorySource,
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
            actor,
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
        actor: MemorySource,
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
        self.log_memory(project, id, MemoryAction::Archived, actor, now_ms, None)?;
        self.require_memory(project, id)
    }

    /// Replaces live memory `old` by live memory `by` of the same project: `old` is retired
    /// and names its successor; logs `superseded` on `old`.
    pub fn supersede_memory(
        &self,
        project: &ProjectId,
        old: u64,
        by: u64,
        actor: MemorySource,
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
            actor,
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
                self.note_restated(id, fact.last_ms)?;
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
            self.log_memory(
                project,
                id,
                MemoryAction::Added,
                MemorySource::Historian,
                now_ms,
                Some("historian"),
            )?;
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

    pub(crate) fn retire(&self, id: u64, by: Option<u64>, now_ms: i64) -> Result<()> {
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
        actor: MemorySource,
        at_ms: i64,
        detail: Option<&str>,
    ) -> Result<()> {
        self.log_memory_change(project, memory_id, (action, actor, None), at_ms, detail)
    }

    /// Logs one change: what happened, who did it and, for the dreamer, which task.
    pub(crate) fn log_memory_change(
        &self,
        project: &ProjectId,
        memory_id: u64,
        (action, actor, task): (MemoryAction, MemorySource, Option<&str>),
        at_ms: i64,
        detail: Option<&str>,
    ) -> Result<()> {
        self.conn()
            .prepare_cached(
                "INSERT INTO memory_log (project_id, memory_id, action, at_ms, detail, actor, task)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .and_then(|mut statement| {
                statement.execute(rusqlite::params![
                    project.as_str(),
                    memory_id,
                    action.as_str(),
                    at_ms,
                    detail,
                    actor.as_str(),
                    task
                ])
            })
            .map(|_| ())
            .map_err(StoreError::sqlite("logging a memory change"))
    }
}
