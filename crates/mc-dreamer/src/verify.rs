//! The `verify_memories` task: each active memory checked against the project's code.
//!
//! Deterministic evidence first ([`crate::suspicion`]): only memories the search finds
//! something against go to the model, a batch at a time, with that evidence. A memory whose
//! file is gone needs more than the current files can say (was the file renamed, moved or
//! deleted?), so those go to the agent loop ([`crate::agent_loop`]) instead, where the model
//! can read the file's history and the code before it decides. The model's
//! verdicts are read strictly and applied in one write transaction per batch through the
//! store's dreamer methods, which log each change with the task's name. A model that fails,
//! stalls or answers garbage changes nothing: the batch's verdicts are applied only once the
//! whole answer has been read, and only while this run still holds its lease.

use mc_core::ProjectId;
use mc_core::dreamer::{
    Candidate, Evidence, MEMORY_TOOLS, VERIFY_SYSTEM, Verdict, judge_tool, parse_verdicts,
    verify_user_message,
};
use mc_llm::StructuredRequest;
use mc_store::{MemoryMaintenance, MemoryStatus, StoreError};

use crate::agent_loop::{Decision, Duty, LoopBudget, LoopStop, run_loop};
use crate::agent_tools::AgentTools;
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

/// What the agent loop is told its verifying duty is.
const LOOK_INSTRUCTIONS: &str = "\
Each memory in the message names a file that is no longer in the project. Find out what \
happened to it: `git_log` of the old path shows the commit that renamed (R, old, new), moved \
or deleted it; `search` and `read_file` show where its content lives now. Then give each \
memory one verdict: `update_memory` with the corrected text (the new path in place of the \
old, nothing else changed) and a reason, `archive_memory` with a reason when what it says \
is gone, or `keep_memory`. A memory you give no verdict is kept.";

/// Runs `verify_memories` on the context's project.
pub fn verify_memories(ctx: &TaskContext<'_>) -> Result<TaskReport> {
    let memories = ctx.memories(&[MemoryStatus::Active])?;
    let Some(folder) = ctx.folder else {
        return Ok(TaskReport::no_folder());
    };
    let index = ProjectIndex::load(folder)?;
    let (gone, judged): (Vec<Candidate>, Vec<Candidate>) = memories
        .iter()
        .filter_map(|memory| candidate_of(memory, &index))
        .partition(names_a_gone_file);
    let apply_batch = |batch: &[Candidate], verdicts: &[Verdict]| {
        ctx.maintain(|memories, now_ms| apply(memories, ctx.project, batch, verdicts, now_ms))
    };
    let mut report = judge_in_batches(ctx, &judged, BATCH, "verdicts", judge, apply_batch)?;
    let looked = if report.failure.is_none() && !gone.is_empty() {
        let tools = AgentTools {
            folder,
            index: &index,
        };
        format!(", {}", look_at_gone_files(ctx, &tools, &gone, &mut report)?)
    } else {
        String::new()
    };
    report.detail = format!(
        "{} active memories, {} candidates from {} files ({} naming a gone file{looked}), {} changed",
        memories.len(),
        judged.len() + gone.len(),
        index.file_count(),
        gone.len(),
        report.changes
    );
    Ok(report)
}

/// Whether the evidence says a file the memory names is gone.
fn names_a_gone_file(candidate: &Candidate) -> bool {
    candidate
        .evidence
        .iter()
        .any(|evidence| matches!(evidence, Evidence::File { present: false, .. }))
}

/// Runs the agent loop over `gone`, a batch at a time within the run's caps, and applies
/// each batch's verdicts under the lease; says how the looking ended.
fn look_at_gone_files(
    ctx: &TaskContext<'_>,
    tools: &AgentTools<'_>,
    gone: &[Candidate],
    report: &mut TaskReport,
) -> Result<String> {
    let mut budget = LoopBudget::new((ctx.clock)());
    let mut stop = LoopStop::Finished;
    let mut looked_at = 0;
    for batch in gone.chunks(BATCH) {
        let asked: Vec<u64> = batch.iter().map(|candidate| candidate.memory_id).collect();
        let accept = |decision: Decision<'_>| match decision {
            Decision::Verdict(verdict) if asked.contains(&verdict.memory_id()) => {
                Ok(format!("recorded for memory {}", verdict.memory_id()))
            }
            Decision::Verdict(verdict) => Err(format!(
                "memory {} is not one of this step's memories",
                verdict.memory_id()
            )),
            Decision::Doc { .. } => Err("this task proposes no doc".to_owned()),
        };
        let duty = Duty {
            instructions: LOOK_INSTRUCTIONS,
            task: verify_user_message(batch),
            decides_with: &MEMORY_TOOLS,
            accept: &accept,
        };
        let end = run_loop(ctx, tools, &duty, &mut budget, report);
        stop = end.stop;
        if stop == LoopStop::ModelFailed {
            break;
        }
        looked_at += batch.len();
        let verdicts = end.verdicts;
        if !verdicts.is_empty() {
            if !(ctx.keep_lease)()? {
                report.failure = Some(Failure::new(
                    "lease_lost",
                    "another dreamer took the lease; the loop's verdicts were not applied",
                ));
                break;
            }
            report.changes += ctx.maintain(|memories, now_ms| {
                apply(memories, ctx.project, batch, &verdicts, now_ms)
            })?;
        }
        if stop.is_cap() {
            break;
        }
    }
    Ok(format!(
        "{looked_at} looked at in the code, the loop {}",
        stop.describe()
    ))
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
    memories: &dyn MemoryMaintenance,
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
        if matches!(verdict, Verdict::Keep { .. })
            || !is_unchanged(memories, project, id, &seen.content)?
        {
            continue;
        }
        let applied = match verdict {
            Verdict::Keep { .. } => continue,
            Verdict::Update {
                memory_id,
                content,
                reason,
            } => memories.rewrite(project, *memory_id, content, (task, reason), now_ms),
            Verdict::Archive { memory_id, reason } => {
                memories.archive(project, *memory_id, task, reason, now_ms)
            }
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
