//! The dreamer's changes to a project's memories, whichever store holds them.
//!
//! A maintenance task reads the project's memories, asks a model, and applies its verdicts
//! in one write transaction per batch. Without a team store the verdicts change the local
//! tables at once ([`WriteTx`]'s dreamer methods). With one, the memories are the team's:
//! [`TeamMaintenance`] reads the cache and queues each verdict in the team write queue, in
//! the same transaction, as a [`Maintenance`] carrying the text the task read, so the team
//! store applies it once (by its write id) and only while the memory still says that. The
//! caller sends the queued writes after the commit ([`TeamMaintenance::into_queued`]). The
//! rules are the same either way: only active memories change (a permanent one is the
//! operator's), a merge names each memory once.

use std::cell::RefCell;

use mc_core::ProjectId;
use mc_core::search::FtsQuery;

use crate::dreamer_rows::only_active;
use crate::error::{Result, StoreError};
use crate::knowledge::ProjectKnowledge;
use crate::memory_rows::{MemoryLogEntry, MemoryStatus, StoredMemory};
use crate::memory_use::UsedMemory;
use crate::search::{MemoryHit, SearchScope};
use crate::store::WriteTx;
use crate::team_cache::TeamCache;
use crate::team_outbox::{Maintenance, MaintenanceKind, QueuedTeamWrite, TeamWrite};

/// The reads and changes of a dreamer task, inside one write transaction.
pub trait MemoryMaintenance: ProjectKnowledge {
    /// The project's memories whose status is in `statuses`, each with its recorded use.
    fn memories_with_use(
        &self,
        project: &ProjectId,
        statuses: &[MemoryStatus],
    ) -> Result<Vec<UsedMemory>>;

    /// Retires active memory `id` for `task`, because of `reason`.
    fn archive(
        &self,
        project: &ProjectId,
        id: u64,
        task: &str,
        reason: &str,
        now_ms: i64,
    ) -> Result<()>;

    /// Gives active memory `id` the text `content` for `task` (the task's name and the
    /// reason, as logged).
    fn rewrite(
        &self,
        project: &ProjectId,
        id: u64,
        content: &str,
        task: (&str, &str),
        now_ms: i64,
    ) -> Result<()>;

    /// Keeps active memory `merged.0` with `content` and retires each of `merged.1` in its
    /// favour.
    fn merge(
        &self,
        project: &ProjectId,
        merged: (u64, &[u64]),
        content: &str,
        task: &str,
        now_ms: i64,
    ) -> Result<()>;
}

impl MemoryMaintenance for WriteTx<'_> {
    fn memories_with_use(
        &self,
        project: &ProjectId,
        statuses: &[MemoryStatus],
    ) -> Result<Vec<UsedMemory>> {
        crate::store::ReadTx::memories_with_use(self, project, statuses)
    }

    fn archive(
        &self,
        project: &ProjectId,
        id: u64,
        task: &str,
        reason: &str,
        now_ms: i64,
    ) -> Result<()> {
        self.dreamer_archive_memory(project, id, task, reason, now_ms)
            .map(|_| ())
    }

    fn rewrite(
        &self,
        project: &ProjectId,
        id: u64,
        content: &str,
        (task, reason): (&str, &str),
        now_ms: i64,
    ) -> Result<()> {
        self.dreamer_rewrite_memory(project, id, content, task, reason, now_ms)
            .map(|_| ())
    }

    fn merge(
        &self,
        project: &ProjectId,
        (keep, others): (u64, &[u64]),
        content: &str,
        task: &str,
        now_ms: i64,
    ) -> Result<()> {
        self.dreamer_merge_memories(project, keep, others, content, task, now_ms)
            .map(|_| ())
    }
}

/// A dreamer task's view of a team's memories: reads from the cache, changes queued for
/// the team store in the caller's write transaction.
pub struct TeamMaintenance<'t, 'c> {
    tx: &'t WriteTx<'c>,
    queued: RefCell<Vec<QueuedTeamWrite>>,
}

impl<'t, 'c> TeamMaintenance<'t, 'c> {
    /// Maintenance of the team's memories inside `tx`.
    pub fn new(tx: &'t WriteTx<'c>) -> Self {
        Self {
            tx,
            queued: RefCell::default(),
        }
    }

    /// The writes queued so far, in the order they were made, to send once the
    /// transaction has committed.
    pub fn into_queued(self) -> Vec<QueuedTeamWrite> {
        self.queued.into_inner()
    }

    fn cache(&self) -> TeamCache<'_, 'c> {
        TeamCache::new(self.tx)
    }

    /// The cached memory `id`, refused unless it is active; with the text the task read.
    fn active(&self, project: &ProjectId, id: u64) -> Result<(u64, String)> {
        let memory =
            self.cache()
                .memory(project, id)?
                .ok_or_else(|| StoreError::UnknownMemory {
                    project: project.to_string(),
                    id,
                })?;
        Ok((id, only_active(memory)?.record.content))
    }

    fn queue(&self, project: &ProjectId, maintenance: Maintenance, now_ms: i64) -> Result<()> {
        let write_id = maintenance.write_id(project, now_ms);
        let write = TeamWrite::Maintain(maintenance);
        self.tx
            .queue_team_write(&write_id, project, &write, now_ms)?;
        self.queued.borrow_mut().push(QueuedTeamWrite {
            seq: 0,
            write_id,
            project: project.clone(),
            write,
            queued_ms: now_ms,
            attempts: 0,
        });
        Ok(())
    }
}

impl ProjectKnowledge for TeamMaintenance<'_, '_> {
    fn memories(
        &self,
        project: &ProjectId,
        statuses: &[MemoryStatus],
    ) -> Result<Vec<StoredMemory>> {
        self.cache().memories(project, statuses)
    }

    fn memory(&self, project: &ProjectId, id: u64) -> Result<Option<StoredMemory>> {
        self.cache().memory(project, id)
    }

    fn memory_log_since(&self, project: &ProjectId, after: u64) -> Result<Vec<MemoryLogEntry>> {
        self.cache().memory_log_since(project, after)
    }

    fn memory_log_head(&self, project: &ProjectId) -> Result<u64> {
        self.cache().memory_log_head(project)
    }

    fn search_memories(
        &self,
        query: &FtsQuery,
        project: &ProjectId,
        scope: &SearchScope,
        limit: u32,
    ) -> Result<Vec<MemoryHit>> {
        self.cache().search_memories(query, project, scope, limit)
    }
}

impl MemoryMaintenance for TeamMaintenance<'_, '_> {
    fn memories_with_use(
        &self,
        project: &ProjectId,
        statuses: &[MemoryStatus],
    ) -> Result<Vec<UsedMemory>> {
        self.tx.team_memories_with_use(project, statuses)
    }

    fn archive(
        &self,
        project: &ProjectId,
        id: u64,
        task: &str,
        reason: &str,
        now_ms: i64,
    ) -> Result<()> {
        let seen = vec![self.active(project, id)?];
        let maintenance = Maintenance {
            change: MaintenanceKind::Archive,
            seen,
            task: task.to_owned(),
            reason: reason.trim().to_owned(),
        };
        self.queue(project, maintenance, now_ms)
    }

    fn rewrite(
        &self,
        project: &ProjectId,
        id: u64,
        content: &str,
        (task, reason): (&str, &str),
        now_ms: i64,
    ) -> Result<()> {
        let seen = self.active(project, id)?;
        let content = content.trim();
        if content == seen.1 {
            return Ok(());
        }
        let maintenance = Maintenance {
            change: MaintenanceKind::Rewrite {
                content: content.to_owned(),
            },
            seen: vec![seen],
            task: task.to_owned(),
            reason: reason.trim().to_owned(),
        };
        self.queue(project, maintenance, now_ms)
    }

    fn merge(
        &self,
        project: &ProjectId,
        (keep, others): (u64, &[u64]),
        content: &str,
        task: &str,
        now_ms: i64,
    ) -> Result<()> {
        let mut seen = vec![self.active(project, keep)?];
        for (index, &other) in others.iter().enumerate() {
            if other == keep || others[..index].contains(&other) {
                return Err(StoreError::MemoryRefused {
                    id: other,
                    reason: "a merge names each memory once",
                });
            }
            seen.push(self.active(project, other)?);
        }
        let maintenance = Maintenance {
            change: MaintenanceKind::Merge {
                content: content.trim().to_owned(),
            },
            seen,
            task: task.to_owned(),
            reason: "merged".to_owned(),
        };
        self.queue(project, maintenance, now_ms)
    }
}
