//! The `rewrite_verbose_memories` task: active memories longer than
//! `dreamer.rewrite_over_chars` are rewritten shorter by the model.
//!
//! Every memory is shown in every session's `m[0]`, so a wordy one is paid for on every
//! call. The long ones go to the model a batch at a time; each rewrite it proposes is used
//! only when [`check_rewrite`] accepts it (non-empty, shorter, every path, name, value and
//! number kept), and only if the memory still says what the model was shown. Accepted ones
//! are written through the store's dreamer log with the task's name, so the head shows them
//! at its next natural rebuild; the run's detail names each memory left as it was and why.
//! A model that fails, stalls or answers garbage changes nothing.

use std::cell::RefCell;

use mc_core::ProjectId;
use mc_core::dreamer::{
    REWRITE_SYSTEM, Rewrite, VerboseMemory, parse_rewrites, rewrite_tool, rewrite_user_message,
};
use mc_llm::StructuredRequest;
use mc_store::{MemoryMaintenance, MemoryStatus, StoreError};

use crate::batches::{TaskContext, ask_batch, batch_max_tokens, judge_in_batches};
use crate::error::Result;
use crate::report::TaskReport;
use crate::rewrite_rule::check_rewrite;
use crate::task::Task;
use crate::unchanged::is_unchanged;

/// Memories rewritten per model call: long texts, so fewer than the verifying task's.
pub const REWRITES_PER_CALL: usize = 8;

/// Runs `rewrite_verbose_memories` on the context's project.
pub fn rewrite_verbose_memories(ctx: &TaskContext<'_>) -> Result<TaskReport> {
    let budget = ctx.settings.rewrite_over_chars;
    let memories = ctx.memories(&[MemoryStatus::Active])?;
    let verbose: Vec<VerboseMemory> = memories
        .iter()
        .filter(|memory| memory.record.content.chars().count() > budget as usize)
        .map(|memory| VerboseMemory {
            memory_id: memory.id,
            category: memory.record.category.as_str().to_owned(),
            content: memory.record.content.clone(),
        })
        .collect();
    let left = RefCell::new(Vec::new());
    let ask = |ctx: &TaskContext<'_>, batch: &[VerboseMemory], report: &mut TaskReport| {
        let rewrites = ask_rewrites(ctx, batch, report)?;
        Some(accepted(batch, rewrites, &mut left.borrow_mut()))
    };
    let apply_batch = |batch: &[VerboseMemory], rewrites: &[Rewrite]| {
        ctx.maintain(|memories, now_ms| apply(memories, ctx.project, batch, rewrites, now_ms))
    };
    let mut report = judge_in_batches(
        ctx,
        &verbose,
        REWRITES_PER_CALL,
        "rewrites",
        ask,
        apply_batch,
    )?;
    let left = left.into_inner();
    report.detail = format!(
        "{} active memories, {} over {budget} characters, {} rewritten{}",
        memories.len(),
        verbose.len(),
        report.changes,
        if left.is_empty() {
            String::new()
        } else {
            format!("; left as they were: {}", left.join(", "))
        }
    );
    Ok(report)
}

/// Asks the model for shorter texts of `batch`; `None` when the call or its answer failed.
fn ask_rewrites(
    ctx: &TaskContext<'_>,
    batch: &[VerboseMemory],
    report: &mut TaskReport,
) -> Option<Vec<Rewrite>> {
    let budget = ctx.settings.rewrite_over_chars;
    let request = StructuredRequest {
        system: REWRITE_SYSTEM.to_owned(),
        user: rewrite_user_message(budget, batch),
        tool: rewrite_tool(),
        max_tokens: batch_max_tokens(batch.len())
            .saturating_add(budget.saturating_mul(u32::try_from(batch.len()).unwrap_or(0)) / 3),
    };
    let asked: Vec<u64> = batch.iter().map(|memory| memory.memory_id).collect();
    ask_batch(ctx, &request, report, |input| parse_rewrites(input, &asked))
}

/// The rewrites of `batch` that [`check_rewrite`] accepts; each memory left as it was is
/// named in `left` with the reason.
fn accepted(
    batch: &[VerboseMemory],
    rewrites: Vec<Rewrite>,
    left: &mut Vec<String>,
) -> Vec<Rewrite> {
    let mut kept = Vec::with_capacity(rewrites.len());
    for memory in batch {
        let id = memory.memory_id;
        let Some(rewrite) = rewrites.iter().find(|rewrite| rewrite.memory_id == id) else {
            left.push(format!("#{id} (no shorter text given)"));
            continue;
        };
        match check_rewrite(&memory.content, &rewrite.content) {
            Ok(()) => kept.push(rewrite.clone()),
            Err(refusal) => left.push(format!("#{id} ({refusal})")),
        }
    }
    kept
}

/// Writes the accepted `rewrites` of `batch`; returns how many memories changed. One whose
/// memory changed since it was read, or that the store refuses (the text repeats another
/// memory), is skipped.
fn apply(
    memories: &dyn MemoryMaintenance,
    project: &ProjectId,
    batch: &[VerboseMemory],
    rewrites: &[Rewrite],
    now_ms: i64,
) -> mc_store::Result<u32> {
    let task = Task::RewriteVerboseMemories.name();
    let mut changes = 0;
    for rewrite in rewrites {
        let id = rewrite.memory_id;
        let Some(seen) = batch.iter().find(|memory| memory.memory_id == id) else {
            continue;
        };
        if !is_unchanged(memories, project, id, &seen.content)? {
            continue;
        }
        let reason = format!(
            "shortened from {} to {} characters",
            seen.content.chars().count(),
            rewrite.content.chars().count()
        );
        match memories.rewrite(project, id, &rewrite.content, (task, &reason), now_ms) {
            Ok(_) => changes += 1,
            Err(StoreError::MemoryRefused { id, reason }) => {
                tracing::info!(memory = id, reason, "dreamer: a rewrite was not applied");
            }
            Err(StoreError::DuplicateMemory { id, existing, .. }) => {
                tracing::info!(
                    memory = id,
                    existing,
                    "dreamer: a rewrite repeats another memory; not applied"
                );
            }
            Err(error) => return Err(error),
        }
    }
    Ok(changes)
}
