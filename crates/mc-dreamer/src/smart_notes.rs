//! The `evaluate_smart_notes` task: each pending smart note's condition checked against the
//! project; one that holds is surfaced (`active`), so the head lists it at its next natural
//! rebuild and `ctx_note read` shows it as due.
//!
//! A condition a rule can read ([`crate::note_condition`]: a day, a file, a commit message)
//! is checked without a model. One in plain words goes to the model with the commits made
//! since the note was written, a batch at a time like the memory tasks, and surfaces only
//! on a verdict that reads cleanly and names a reason; a model that fails, stalls or answers
//! garbage surfaces nothing, and without a model such notes simply wait. A note whose
//! condition the agent rewrote while it was being judged is not surfaced: it goes back to
//! be judged again. Surfacing changes no byte of a prompt already sent. A team's smart note
//! is surfaced the same way: the store queues the change for the team store in the same
//! transaction (`mc-store`'s `team_notes.rs`).

use mc_core::ProjectId;
use mc_core::dreamer::{
    CommitSeen, NOTES_SYSTEM, NoteCheck, NoteVerdict, notes_tool, notes_user_message,
    parse_note_verdicts,
};
use mc_llm::StructuredRequest;
use mc_store::{StoredNote, WriteTx};

use crate::batches::{TaskContext, ask_batch, batch_max_tokens, judge_in_batches};
use crate::error::Result;
use crate::note_condition::{ProjectNow, day_of, holds, parse_condition};
use crate::project_commits::{ProjectCommit, commits_since};
use crate::report::{Failure, TaskReport};

/// Notes judged per model call, as many as memories per verifying call.
pub const NOTES_PER_CALL: usize = 10;

/// A note a rule found due: its id, the condition checked and why it holds.
struct Due {
    id: u64,
    condition: String,
    reason: String,
}

/// Runs `evaluate_smart_notes` on the context's project.
pub fn evaluate_smart_notes(ctx: &TaskContext<'_>) -> Result<TaskReport> {
    let Some(folder) = ctx.folder else {
        return Ok(TaskReport::no_folder());
    };
    let pending = ctx.store.read(|tx| tx.pending_smart_notes(ctx.project))?;
    let Some(oldest_ms) = pending.iter().map(|note| note.created_ms).min() else {
        return Ok(TaskReport {
            detail: "no pending smart notes".to_owned(),
            ..TaskReport::default()
        });
    };
    let now_ms = (ctx.clock)();
    let commits = commits_since(folder, oldest_ms);
    let exists = |path: &str| folder.exists(path).ok();
    let (mut due, mut plain, mut waiting) = (Vec::new(), Vec::new(), 0);
    for note in &pending {
        let Some(condition) = note.surface_condition.clone() else {
            continue;
        };
        let since: Vec<&ProjectCommit> = commits
            .iter()
            .filter(|commit| commit.committed_ms >= note.created_ms)
            .collect();
        match parse_condition(&condition) {
            Some(rule) => {
                let project = ProjectNow {
                    now_ms,
                    commits: &since,
                    exists: &exists,
                };
                match holds(&rule, &project) {
                    Some(reason) => due.push(Due {
                        id: note.id,
                        condition,
                        reason,
                    }),
                    None => waiting += 1,
                }
            }
            None => plain.push(check_of(note, condition, &since)),
        }
    }
    let mut report = TaskReport::default();
    let surfaced = surface_due(ctx, &due, now_ms, &mut report)?;
    let plain_part = if plain.is_empty() {
        String::new()
    } else if !ctx.model.has_model(ctx.project) {
        format!("; {} in plain words wait for a model", plain.len())
    } else {
        report = judge_in_batches(
            ctx,
            &plain,
            NOTES_PER_CALL,
            "note verdicts",
            judge,
            |batch, verdicts| {
                let now_ms = (ctx.clock)();
                Ok(ctx
                    .store
                    .write(|tx| apply(tx, ctx.project, batch, verdicts, now_ms))?)
            },
        )?;
        format!(
            "; {} in plain words, {} found due by the model",
            plain.len(),
            report.changes
        )
    };
    report.changes += surfaced.len() as u32;
    let named: Vec<String> = surfaced
        .iter()
        .map(|due| format!("#{} ({})", due.id, due.reason))
        .collect();
    report.detail = format!(
        "{} pending smart notes: {} due by rule{}, {waiting} not yet{plain_part}",
        pending.len(),
        surfaced.len(),
        if named.is_empty() {
            String::new()
        } else {
            format!(" [{}]", named.join(", "))
        },
    );
    Ok(report)
}

/// What the model is shown about `note`: its condition and the commits since, newest first.
fn check_of(note: &StoredNote, condition: String, since: &[&ProjectCommit]) -> NoteCheck {
    NoteCheck {
        note_id: note.id,
        condition,
        written: day_of(note.created_ms),
        commits: since
            .iter()
            .map(|commit| CommitSeen {
                subject: commit.subject.clone(),
                files: commit.files.clone(),
            })
            .collect(),
    }
}

/// Surfaces the notes a rule found due, in one transaction under the lease; returns the ones
/// that surfaced (a note rewritten or dismissed meanwhile does not).
fn surface_due<'a>(
    ctx: &TaskContext<'_>,
    due: &'a [Due],
    now_ms: i64,
    report: &mut TaskReport,
) -> Result<Vec<&'a Due>> {
    if due.is_empty() {
        return Ok(Vec::new());
    }
    if !(ctx.keep_lease)()? {
        report.failure = Some(Failure::new(
            "lease_lost",
            "another dreamer took the lease before the due notes surfaced",
        ));
        return Ok(Vec::new());
    }
    let surfaced = ctx.store.write(|tx| {
        let mut surfaced = Vec::new();
        for note in due {
            if tx.surface_note(ctx.project, note.id, &note.condition, now_ms)? {
                tracing::info!(
                    note = note.id,
                    reason = note.reason,
                    "dreamer: a smart note is due"
                );
                surfaced.push(note);
            }
        }
        Ok(surfaced)
    })?;
    Ok(surfaced)
}

/// Asks the model whether the conditions of `batch` hold.
fn judge(
    ctx: &TaskContext<'_>,
    batch: &[NoteCheck],
    report: &mut TaskReport,
) -> Option<Vec<NoteVerdict>> {
    let request = StructuredRequest {
        system: NOTES_SYSTEM.to_owned(),
        user: notes_user_message(&day_of((ctx.clock)()), batch),
        tool: notes_tool(),
        max_tokens: batch_max_tokens(batch.len()),
    };
    let asked: Vec<u64> = batch.iter().map(|note| note.note_id).collect();
    ask_batch(ctx, &request, report, |input| {
        parse_note_verdicts(input, &asked)
    })
}

/// Surfaces the notes of `batch` the model found due; returns how many surfaced.
fn apply(
    tx: &WriteTx<'_>,
    project: &ProjectId,
    batch: &[NoteCheck],
    verdicts: &[NoteVerdict],
    now_ms: i64,
) -> mc_store::Result<u32> {
    let mut surfaced = 0;
    for verdict in verdicts.iter().filter(|verdict| verdict.holds) {
        let Some(seen) = batch.iter().find(|note| note.note_id == verdict.note_id) else {
            continue;
        };
        if tx.surface_note(project, seen.note_id, &seen.condition, now_ms)? {
            tracing::info!(
                note = seen.note_id,
                reason = verdict.reason,
                "dreamer: the model found a smart note due"
            );
            surfaced += 1;
        }
    }
    Ok(surfaced)
}
