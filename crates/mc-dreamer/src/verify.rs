//! The `verify_memories` task: each active memory checked against the project's code.
//!
//! Deterministic evidence first ([`crate::suspicion`]): only memories the search finds
//! something against go to the model, a batch at a time, with that evidence. The model's
//! verdicts are read strictly and applied in one write transaction per batch through the
//! store's dreamer methods, which log each change with the task's name. A model that fails,
//! stalls or answers garbage changes nothing: the batch's verdicts are applied only once the
//! whole answer has been read, and only while this run still holds its lease.

use mc_core::ProjectId;
use mc_core::dreamer::{
    Candidate, VERIFY_SYSTEM, Verdict, judge_tool, parse_verdicts, verify_user_message,
};
use mc_llm::StructuredRequest;
use mc_store::{MemoryStatus, StoreError, WriteTx};

use crate::batches::{TaskContext, ask_batch, batch_max_tokens, judge_in_batches};
use crate::error::Result;
use crate::project_index::ProjectIndex;
use crate::report::{Failure, TaskReport};
use crate::suspicion::candidate_of;
use crate::task::Task;
use crate::unchanged::is_unchanged;

/// Candidates judged per model call: enough to amortise the instructions, few enough that
/// one bad answer loses little.
pub const BATCH: usize = 10;

/// Runs `verify_memories` on the context's project.
pub fn verify_memories(ctx: &TaskContext<'_>) -> Result<TaskReport> {
    let memories = ctx
        .store
        .read(|tx| tx.memories(ctx.project, &[MemoryStatus::Active]))?;
    let Some(folder) = ctx.folder else {
        let failure = Failure::new("project_folder", "the project's folder was not opened");
        return Ok(TaskReport {
            failure: Some(failure),
            ..TaskReport::default()
        });
    };
    let index = ProjectIndex::load(folder)?;
    let candidates: Vec<Candidate> = memories
        .iter()
        .filter_map(|memory| candidate_of(memory, &index))
        .collect();
    let mut report = judge_in_batches(ctx, &candidates, BATCH, "verdicts", judge, apply)?;
    report.detail = format!(
        "{} active memories, {} candidates from {} files, {} changed",
        memories.len(),
        candidates.len(),
        index.file_count(),
        report.changes
    );
    Ok(report)
}

/// Asks the model about `batch`; the verdicts, or `None` (the failure noted in `report`).
fn judge(
    ctx: &TaskContext<'_>,
    batch: &[Candidate],
    report: &mut TaskReport,
) -> Option<Vec<Verdict>> {
    let request = StructuredRequest {
        system: VERIFY_SYSTEM.to_owned(),
        user: verify_user_message(batch),
        tool: judge_tool(),
        max_tokens: batch_max_tokens(batch.len()),
    };
    let asked: Vec<u64> = batch.iter().map(|candidate| candidate.memory_id).collect();
    ask_batch(ctx, &request, report, |input| parse_verdicts(input, &asked))
}

/// Applies `verdicts` about `batch`; returns how many memories changed. A verdict about a
/// memory that changed since it was read, or that the store refuses (the new text repeats
/// another memory), is skipped, not fatal: the rest of the batch still holds.
fn apply(
    tx: &WriteTx<'_>,
    project: &ProjectId,
    batch: &[Candidate],
    verdicts: &[Verdict],
    now_ms: i64,
) -> mc_store::Result<u32> {
    let task = Task::VerifyMemories.name();
    let mut changes = 0;
    for verdict in verdicts {
        let id = verdict.memory_id();
        let Some(seen) = batch.iter().find(|candidate| candidate.memory_id == id) else {
            continue;
        };
        if matches!(verdict, Verdict::Keep { .. }) || !is_unchanged(tx, project, id, &seen.content)?
        {
            continue;
        }
        let applied = match verdict {
            Verdict::Keep { .. } => continue,
            Verdict::Update {
                memory_id,
                content,
                reason,
            } => tx
                .dreamer_rewrite_memory(project, *memory_id, content, task, reason, now_ms)
                .map(|_| ()),
            Verdict::Archive { memory_id, reason } => tx
                .dreamer_archive_memory(project, *memory_id, task, reason, now_ms)
                .map(|_| ()),
        };
        match applied {
            Ok(()) => changes += 1,
            Err(StoreError::MemoryRefused { id, reason }) => {
                tracing::info!(memory = id, reason, "dreamer: a verdict was not applied");
            }
            Err(StoreError::DuplicateMemory { id, existing, .. }) => {
                tracing::info!(
                    memory = id,
                    existing,
                    "dreamer: an update repeats another memory; not applied"
                );
            }
            Err(error) => return Err(error),
        }
    }
    Ok(changes)
}
