//! The `consolidate_memories` task: memories that say the same thing twice become one.
//!
//! Groups by word overlap ([`crate::near_duplicates`]) go to the model, a few groups per
//! call; it names which memories of a group to merge and the merged text. Each merge keeps
//! one memory with the new text and retires the others naming it as their successor, in one
//! write transaction per call, through the store's dreamer log with the task's name. As in
//! `verify_memories`, a failed or unreadable answer changes nothing.

use mc_core::ProjectId;
use mc_core::dreamer::{
    MERGE_SYSTEM, Merge, MergeGroup, merge_tool, merge_user_message, parse_merges,
};
use mc_llm::StructuredRequest;
use mc_store::{MemoryMaintenance, MemoryStatus, StoreError};

use crate::batches::{TaskContext, ask_batch, batch_max_tokens, judge_in_batches};
use crate::error::Result;
use crate::near_duplicates::near_duplicate_groups;
use crate::report::TaskReport;
use crate::task::Task;
use crate::unchanged::is_unchanged;

/// Groups shown per model call.
pub const GROUPS_PER_CALL: usize = 8;

/// Runs `consolidate_memories` on the context's project.
pub fn consolidate_memories(ctx: &TaskContext<'_>) -> Result<TaskReport> {
    let memories = ctx.memories(&[MemoryStatus::Active])?;
    let groups = near_duplicate_groups(&memories);
    let apply_batch = |batch: &[MergeGroup], merges: &[Merge]| {
        ctx.maintain(|memories, now_ms| apply(memories, ctx.project, batch, merges, now_ms))
    };
    let mut report = judge_in_batches(ctx, &groups, GROUPS_PER_CALL, "merges", ask, apply_batch)?;
    report.detail = format!(
        "{} active memories, {} groups by word overlap, {} changed",
        memories.len(),
        groups.len(),
        report.changes
    );
    Ok(report)
}

/// Whether every memory `merge` names still says what its group showed the model.
fn all_unchanged(
    memories: &dyn MemoryMaintenance,
    project: &ProjectId,
    batch: &[MergeGroup],
    merge: &Merge,
) -> mc_store::Result<bool> {
    for &id in std::iter::once(&merge.keep).chain(&merge.others) {
        let seen = batch
            .iter()
            .flat_map(|group| &group.memories)
            .find(|(member, ..)| *member == id);
        let Some((_, _, content)) = seen else {
            return Ok(false);
        };
        if !is_unchanged(memories, project, id, content)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn ask(ctx: &TaskContext<'_>, batch: &[MergeGroup], report: &mut TaskReport) -> Option<Vec<Merge>> {
    let request = StructuredRequest {
        system: MERGE_SYSTEM.to_owned(),
        user: merge_user_message(batch),
        tool: merge_tool(),
        max_tokens: batch_max_tokens(batch.len()),
    };
    ask_batch(ctx, &request, report, |input| parse_merges(input, batch))
}

/// Applies `merges` of `batch`'s groups; returns the memories changed (the kept one and each
/// retired one). A merge naming a memory that changed since it was read, or that the store
/// refuses, is skipped.
fn apply(
    memories: &dyn MemoryMaintenance,
    project: &ProjectId,
    batch: &[MergeGroup],
    merges: &[Merge],
    now_ms: i64,
) -> mc_store::Result<u32> {
    let task = Task::ConsolidateMemories.name();
    let mut changes = 0;
    for merge in merges {
        if !all_unchanged(memories, project, batch, merge)? {
            continue;
        }
        match memories.merge(
            project,
            (merge.keep, &merge.others),
            &merge.content,
            task,
            now_ms,
        ) {
            Ok(_) => changes += 1 + u32::try_from(merge.others.len()).unwrap_or(u32::MAX - 1),
            Err(StoreError::MemoryRefused { id, reason }) => {
                tracing::info!(memory = id, reason, "dreamer: a merge was not applied");
            }
            Err(StoreError::DuplicateMemory { id, existing, .. }) => {
                tracing::info!(
                    memory = id,
                    existing,
                    "dreamer: a merged text repeats another memory; not applied"
                );
            }
            Err(error) => return Err(error),
        }
    }
    Ok(changes)
}
