//! What a task runs with, and the loop both model-judged tasks run: ask the model about one
//! batch at a time, and apply its answer only while the run is within its deadline and still
//! holds its lease.

use mc_core::ProjectId;
use mc_llm::StructuredRequest;
use mc_store::{
    KnowledgeSource, MemoryMaintenance, MemoryStatus, Store, StoredMemory, TeamMaintenance,
};
use mc_team_store::TeamStoreError;
use serde_json::Value;

use crate::error::{DreamerError, Result};
use crate::in_flight::InFlight;
use crate::model::DreamerModel;
use crate::project_folder::ProjectFolder;
use crate::report::{Failure, TaskReport};
use crate::task_settings::TaskSettings;
use crate::team_memories::TeamMemories;

/// What a task runs with.
pub struct TaskContext<'a> {
    /// The store.
    pub store: &'a Store,
    /// The project.
    pub project: &'a ProjectId,
    /// Its folder, read-only; `None` for a task that does not read it
    /// ([`crate::Task::needs_folder`]).
    pub folder: Option<&'a ProjectFolder>,
    /// The tasks' settings.
    pub settings: TaskSettings,
    /// The model to ask.
    pub model: &'a dyn DreamerModel,
    /// The proxy's calls in flight, which each model call of the run waits for
    /// ([`TaskContext::ask`]).
    pub calls: &'a dyn InFlight,
    /// The wall clock, unix milliseconds.
    pub clock: &'a dyn Fn() -> i64,
    /// Renews this run's lease; `false` once another holder has it.
    pub keep_lease: &'a dyn Fn() -> Result<bool>,
    /// When the run must stop asking, unix milliseconds.
    pub deadline_ms: i64,
    /// The data directory (the store's folder), where doc proposals are written.
    pub data_dir: &'a std::path::Path,
    /// The team store, when the project's memories live there and the task changes them:
    /// the task then reads the team's memories and its changes go through the team's
    /// write path.
    pub team: Option<&'a TeamMemories>,
}

impl TaskContext<'_> {
    /// The project's memories whose status is in `statuses`, from the store that holds
    /// them (the team's freshly synced cache in team mode).
    pub fn memories(&self, statuses: &[MemoryStatus]) -> Result<Vec<StoredMemory>> {
        let source = match self.team {
            Some(team) => {
                team.refresh(self.project, (self.clock)());
                KnowledgeSource::TeamCache
            }
            None => KnowledgeSource::Local,
        };
        Ok(self.store.read(|tx| {
            tx.with_knowledge(source, |knowledge| {
                knowledge.memories(self.project, statuses)
            })
        })?)
    }

    /// Runs `change` over the project's memories in one write transaction and returns the
    /// memories it changed: applied at once to the local tables, or in team mode queued in
    /// the transaction and sent once it has committed (the memories of a change the team
    /// store refused are not counted; those of one it could not take yet are, as the change
    /// waits in the queue).
    pub fn maintain(
        &self,
        change: impl FnOnce(&dyn MemoryMaintenance, i64) -> mc_store::Result<u32>,
    ) -> Result<u32> {
        let now_ms = (self.clock)();
        let Some(team) = self.team else {
            return Ok(self.store.write(|tx| change(tx, now_ms))?);
        };
        let (counted, queued) = self.store.write(|tx| {
            let queue = TeamMaintenance::new(tx);
            let counted = change(&queue, now_ms)?;
            Ok((counted, queue.into_queued()))
        })?;
        let sent = queued.len();
        let delivered =
            team.deliver(self.project, queued, now_ms)
                .map_err(|error| match error {
                    TeamStoreError::Local(error) => DreamerError::Store(error),
                    other => DreamerError::TeamQueue {
                        reason: other.to_string(),
                    },
                })?;
        if delivered.refused > 0 || delivered.queued > 0 {
            tracing::info!(
                sent,
                landed = delivered.landed,
                queued = delivered.queued,
                refused = delivered.refused,
                "dreamer: not every change landed in the team store now (refused: the memory \
                 moved on; queued: sent when the server answers)"
            );
        }
        Ok(counted.saturating_sub(delivered.refused))
    }
}

/// Runs `items` through the model `per_call` at a time: `ask` returns the model's answer for
/// a batch (`None` stops the run; it has said why in the report), `apply` writes it (in one
/// transaction: [`TaskContext::maintain`] for memories) and counts the changes. `answers`
/// names what a lost lease left unapplied.
pub(crate) fn judge_in_batches<T, A>(
    ctx: &TaskContext<'_>,
    items: &[T],
    per_call: usize,
    answers: &str,
    ask: impl Fn(&TaskContext<'_>, &[T], &mut TaskReport) -> Option<Vec<A>>,
    apply: impl Fn(&[T], &[A]) -> Result<u32>,
) -> Result<TaskReport> {
    let mut report = TaskReport::default();
    for batch in items.chunks(per_call) {
        if (ctx.clock)() >= ctx.deadline_ms {
            report.failure = Some(Failure::new("deadline", "the run's time ran out"));
            break;
        }
        let Some(answered) = ask(ctx, batch, &mut report) else {
            break;
        };
        if !(ctx.keep_lease)()? {
            report.failure = Some(Failure::new(
                "lease_lost",
                format!("another dreamer took the lease; its {answers} were not applied"),
            ));
            break;
        }
        report.changes += apply(batch, &answered)?;
    }
    Ok(report)
}

/// Asks the model `request` about one batch and reads its answer with `parse`; `None` when
/// the call failed, the session kept the credential busy, or the answer does not hold (the
/// failure noted in `report`, the answer's tokens counted either way).
pub(crate) fn ask_batch<A>(
    ctx: &TaskContext<'_>,
    request: &StructuredRequest,
    report: &mut TaskReport,
    parse: impl FnOnce(&Value) -> std::result::Result<A, String>,
) -> Option<A> {
    let answer = ctx.ask(request, ctx.deadline_ms, report).ok()?;
    match parse(&answer.input) {
        Ok(parsed) => Some(parsed),
        Err(reason) => {
            report.failure = Some(Failure::new("invalid_answer", reason));
            None
        }
    }
}

/// The answer's room for a batch of `items`: a base and a share per item.
pub(crate) fn batch_max_tokens(items: usize) -> u32 {
    512 + 256 * u32::try_from(items).unwrap_or(u32::MAX / 512)
}
