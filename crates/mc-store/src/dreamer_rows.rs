//! The dreamer's rows (schema v20): the lease per conflict domain, the record of every run,
//! and the memory changes a maintenance task makes.
//!
//! The lease is what keeps two proxies on one store from running memory-changing tasks at
//! once: taking it is one conditional upsert inside a write transaction (`BEGIN IMMEDIATE`
//! serialises writers across processes), so exactly one owner holds a domain until it
//! releases it or its expiry passes. A holder renews by taking it again before it lapses; a
//! killed holder stops renewing and the next scheduler takes over once the expiry is behind
//! it. Times are arguments, so the rule is tested on a simulated clock.
//!
//! Maintenance changes go through the same log as every other memory change, with the
//! dreamer as actor and the task's name, so the head's delta shows them on the next natural
//! rebuild and `memory log` can say which task made them and why. The dreamer only touches
//! `active` memories: a permanent one is the operator's to retire.

use mc_core::ProjectId;
use mc_core::historian::fact_key;
use rusqlite::{OptionalExtension, Row};

use crate::error::{Result, StoreError};
use crate::memory_rows::{MemoryAction, MemorySource, MemoryStatus, StoredMemory, key_of};
use crate::store::{ReadTx, WriteTx};

/// Who holds a conflict domain, and until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The conflict domain (`memories:<project>`).
    pub domain: String,
    /// The holder's name (one per scheduler process).
    pub owner: String,
    /// When the holder took it, unix milliseconds.
    pub acquired_ms: i64,
    /// When it lapses unless renewed, unix milliseconds.
    pub expires_ms: i64,
}

/// How a dreamer run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunOutcome {
    /// It ran to the end (possibly changing nothing).
    Done,
    /// It failed; `failure_class` says how.
    Failed,
    /// It did not run (another holder had the lease, the project's folder is gone, ...).
    Skipped,
}

impl RunOutcome {
    /// The name as stored and printed.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        [Self::Done, Self::Failed, Self::Skipped]
            .into_iter()
            .find(|outcome| outcome.as_str() == name)
    }
}

/// One run of one task on one project.
#[derive(Debug, Clone, PartialEq)]
pub struct DreamerRun {
    /// The store's id (0 before it is recorded).
    pub id: u64,
    /// The task (`verify_memories`, ...).
    pub task: String,
    /// The project it ran on.
    pub project: ProjectId,
    /// When it started, unix milliseconds.
    pub started_ms: i64,
    /// When it ended, unix milliseconds.
    pub finished_ms: i64,
    /// How it ended.
    pub outcome: RunOutcome,
    /// The model that answered (or was asked last), when one was asked.
    pub model: Option<String>,
    /// Model calls made.
    pub model_calls: u32,
    /// Prompt tokens reported, cache reads and writes included.
    pub input_tokens: u64,
    /// Output tokens reported.
    pub output_tokens: u64,
    /// What the calls cost at the model's list price, US dollars (0 for an unknown model).
    pub cost_usd: f64,
    /// Memory changes it made.
    pub changes: u32,
    /// How it failed (`timeout`, `overloaded`, `rate_limited`, `invalid_answer`, ...), the
    /// key identical failures are counted by.
    pub failure_class: Option<String>,
    /// The provider's own error message, when a provider answered with one.
    pub provider_error: Option<String>,
    /// A line on what it did or why it was skipped.
    pub detail: Option<String>,
}

const RUN_COLUMNS: &str = "id, task, project_id, started_ms, finished_ms, outcome, model, \
     model_calls, input_tokens, output_tokens, cost_usd, changes, failure_class, \
     provider_error, detail";

fn run_from_row(row: &Row<'_>) -> rusqlite::Result<DreamerRun> {
    let project: String = row.get(2)?;
    let outcome: String = row.get(5)?;
    let bad = |index, name: String| {
        rusqlite::Error::FromSqlConversionFailure(
            index,
            rusqlite::types::Type::Text,
            format!("unknown stored value `{name}`").into(),
        )
    };
    Ok(DreamerRun {
        id: row.get(0)?,
        task: row.get(1)?,
        project: ProjectId::new(project.clone()).map_err(|_| bad(2, project))?,
        started_ms: row.get(3)?,
        finished_ms: row.get(4)?,
        outcome: RunOutcome::parse(&outcome).ok_or_else(|| bad(5, outcome))?,
        model: row.get(6)?,
        model_calls: row.get(7)?,
        input_tokens: row.get(8)?,
        output_tokens: row.get(9)?,
        cost_usd: row.get(10)?,
        changes: row.get(11)?,
        failure_class: row.get(12)?,
        provider_error: row.get(13)?,
        detail: row.get(14)?,
    })
}

impl ReadTx<'_> {
    /// The lease on `domain` as stored, expired or not.
    pub fn dreamer_lease(&self, domain: &str) -> Result<Option<Lease>> {
        self.conn()
            .prepare_cached(
                "SELECT domain, owner, acquired_ms, expires_ms FROM dreamer_leases
                 WHERE domain = ?1",
            )
            .and_then(|mut statement| {
                statement
                    .query_row([domain], |row| {
                        Ok(Lease {
                            domain: row.get(0)?,
                            owner: row.get(1)?,
                            acquired_ms: row.get(2)?,
                            expires_ms: row.get(3)?,
                        })
                    })
                    .optional()
            })
            .map_err(StoreError::sqlite("reading a dreamer lease"))
    }

    /// The newest `limit` runs, newest first; of one project when `project` is given.
    pub fn dreamer_runs(
        &self,
        project: Option<&ProjectId>,
        limit: usize,
    ) -> Result<Vec<DreamerRun>> {
        const DOING: &str = "reading dreamer runs";
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut statement = self
            .conn()
            .prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM dreamer_runs
                 WHERE ?1 IS NULL OR project_id = ?1 ORDER BY id DESC LIMIT ?2"
            ))
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map(
                rusqlite::params![project.map(ProjectId::as_str), limit],
                run_from_row,
            )
            .map_err(StoreError::sqlite(DOING))?;
        rows.map(|row| row.map_err(StoreError::sqlite(DOING)))
            .collect()
    }
}

impl WriteTx<'_> {
    /// Takes or renews the lease on `domain` for `owner` until `now_ms + ttl_ms`: granted when
    /// nobody holds it, when `owner` already does, or when the holder's expiry is at or before
    /// `now_ms`. Returns whether `owner` holds it now.
    pub fn take_dreamer_lease(
        &self,
        domain: &str,
        owner: &str,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<bool> {
        let changed = self
            .conn()
            .prepare_cached(
                "INSERT INTO dreamer_leases (domain, owner, acquired_ms, expires_ms)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (domain) DO UPDATE SET
                     owner = excluded.owner,
                     acquired_ms = CASE WHEN dreamer_leases.owner = excluded.owner
                         THEN dreamer_leases.acquired_ms ELSE excluded.acquired_ms END,
                     expires_ms = excluded.expires_ms
                 WHERE dreamer_leases.owner = excluded.owner
                    OR dreamer_leases.expires_ms <= excluded.acquired_ms",
            )
            .and_then(|mut statement| {
                statement.execute(rusqlite::params![
                    domain,
                    owner,
                    now_ms,
                    now_ms.saturating_add(ttl_ms.max(1))
                ])
            })
            .map_err(StoreError::sqlite("taking a dreamer lease"))?;
        Ok(changed == 1)
    }

    /// Gives up `owner`'s lease on `domain` (nothing when someone else holds it).
    pub fn release_dreamer_lease(&self, domain: &str, owner: &str) -> Result<()> {
        self.conn()
            .prepare_cached("DELETE FROM dreamer_leases WHERE domain = ?1 AND owner = ?2")
            .and_then(|mut statement| statement.execute([domain, owner]))
            .map(|_| ())
            .map_err(StoreError::sqlite("releasing a dreamer lease"))
    }

    /// Records a finished run; returns its id.
    pub fn record_dreamer_run(&self, run: &DreamerRun) -> Result<u64> {
        self.conn()
            .prepare_cached(
                "INSERT INTO dreamer_runs (task, project_id, started_ms, finished_ms, outcome,
                   model, model_calls, input_tokens, output_tokens, cost_usd, changes,
                   failure_class, provider_error, detail)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
                 RETURNING id",
            )
            .and_then(|mut statement| {
                statement.query_row(
                    rusqlite::params![
                        run.task,
                        run.project.as_str(),
                        run.started_ms,
                        run.finished_ms,
                        run.outcome.as_str(),
                        run.model,
                        run.model_calls,
                        run.input_tokens,
                        run.output_tokens,
                        if run.cost_usd.is_finite() {
                            run.cost_usd.max(0.0)
                        } else {
                            0.0
                        },
                        run.changes,
                        run.failure_class,
                        run.provider_error,
                        run.detail,
                    ],
                    |row| row.get(0),
                )
            })
            .map_err(StoreError::sqlite("recording a dreamer run"))
    }

    /// Retires an active memory for `task`, logging `archived` with `reason`.
    pub fn dreamer_archive_memory(
        &self,
        project: &ProjectId,
        id: u64,
        task: &str,
        reason: &str,
        now_ms: i64,
    ) -> Result<StoredMemory> {
        self.require_active(project, id)?;
        self.retire(id, None, now_ms)?;
        self.log_memory_change(
            project,
            id,
            (MemoryAction::Archived, MemorySource::Dreamer, Some(task)),
            now_ms,
            Some(reason.trim()),
        )?;
        self.require_memory(project, id)
    }

    /// Rewrites an active memory's content for `task`, logging `changed` with `reason`.
    /// Nothing changes (and nothing is logged) when the text is the same; a text another live
    /// memory already states is refused, as for any edit.
    pub fn dreamer_rewrite_memory(
        &self,
        project: &ProjectId,
        id: u64,
        content: &str,
        task: &str,
        reason: &str,
        now_ms: i64,
    ) -> Result<StoredMemory> {
        let memory = self.require_active(project, id)?;
        let content = content.trim();
        if content == memory.record.content {
            return Ok(memory);
        }
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
        self.conn()
            .prepare_cached(
                "UPDATE memories SET content = ?2, content_key = ?3, updated_ms = ?4 WHERE id = ?1",
            )
            .and_then(|mut statement| {
                statement.execute(rusqlite::params![id, content, fact_key(content), now_ms])
            })
            .map_err(StoreError::sqlite("rewriting a memory"))?;
        let detail = format!("content: {}", reason.trim());
        self.log_memory_change(
            project,
            id,
            (MemoryAction::Changed, MemorySource::Dreamer, Some(task)),
            now_ms,
            Some(&detail),
        )?;
        self.require_memory(project, id)
    }

    /// Merges `others` into `keep` for `task`: `keep` takes `content` (when it differs) and
    /// each other is retired naming `keep` as its successor. Every memory must be active and
    /// distinct.
    pub fn dreamer_merge_memories(
        &self,
        project: &ProjectId,
        keep: u64,
        others: &[u64],
        content: &str,
        task: &str,
        now_ms: i64,
    ) -> Result<StoredMemory> {
        self.require_active(project, keep)?;
        for (index, &other) in others.iter().enumerate() {
            if other == keep || others[..index].contains(&other) {
                return Err(StoreError::MemoryRefused {
                    id: other,
                    reason: "a merge names each memory once",
                });
            }
            self.require_active(project, other)?;
        }
        // The others leave first: one of them may already say what the merged text says.
        for &other in others {
            self.retire(other, Some(keep), now_ms)?;
            let detail = format!("by {keep}");
            self.log_memory_change(
                project,
                other,
                (MemoryAction::Superseded, MemorySource::Dreamer, Some(task)),
                now_ms,
                Some(&detail),
            )?;
        }
        self.dreamer_rewrite_memory(project, keep, content, task, "merged", now_ms)
    }

    /// The project's memory `id`, refused unless it is active.
    fn require_active(&self, project: &ProjectId, id: u64) -> Result<StoredMemory> {
        only_active(self.require_memory(project, id)?)
    }
}

/// `memory`, refused unless it is active: the dreamer never retires a permanent memory (the
/// operator's) and has nothing to do with an archived one.
pub(crate) fn only_active(memory: StoredMemory) -> Result<StoredMemory> {
    let id = memory.id;
    match memory.record.status {
        MemoryStatus::Active => Ok(memory),
        MemoryStatus::Permanent => Err(StoreError::MemoryRefused {
            id,
            reason: "it is permanent; only the operator retires it",
        }),
        MemoryStatus::Archived => Err(StoreError::MemoryRefused {
            id,
            reason: "it is already archived",
        }),
    }
}

#[cfg(test)]
mod tests;
