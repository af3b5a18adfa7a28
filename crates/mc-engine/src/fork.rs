//! Forking a session when a client rewinds or edits its history.
//!
//! The branch starts with copies of the shared prefix (messages and their tags, so every
//! unit keeps its number) and of what the original had already reduced in it: landed drops,
//! excerpts, clipped tool inputs, dropped reasoning, and a proven window. Its first pass
//! renders the head anew, as the provider has never seen this conversation; queued drops stay
//! with the original. Without the reductions a branch started over at the full size of its
//! history: a client that rewinds after an overflow (Claude Code retries with a shorter
//! history) got a branch larger than the session it left.

use mc_core::SessionId;
use mc_core::tags::TagNo;
use mc_store::{BRANCH_SEPARATOR, WriteTx};

use crate::error::{EngineError, Result};
use crate::pass::Engine;
use crate::state::{EngineState, load_state, store_state};

/// The source recorded for drops a branch inherits.
const INHERITED: &str = "fork";

impl Engine {
    /// Forks `parent` after its first `at` messages into the next free `BASE~N` branch (BASE
    /// is `parent` without any branch suffix) and returns the branch's id.
    pub fn fork(&self, parent: &SessionId, at: u64, now_ms: u64) -> Result<SessionId> {
        let now_ms = i64::try_from(now_ms).unwrap_or(i64::MAX);
        self.store()
            .write_with(|tx| fork_in(tx, parent, at, now_ms))
    }
}

fn fork_in(tx: &WriteTx<'_>, parent: &SessionId, at: u64, now_ms: i64) -> Result<SessionId> {
    let base = base_of(parent);
    let taken = tx.branches(&base)?;
    let mut number = taken.len();
    let branch = loop {
        let candidate =
            SessionId::new(format!("{base}{BRANCH_SEPARATOR}{number}")).map_err(|error| {
                EngineError::BranchId {
                    parent: parent.clone(),
                    reason: error.to_string(),
                }
            })?;
        // A session a client named `BASE~N` itself is not a branch, but holds the name.
        if taken.iter().all(|branch| branch.session.id != candidate)
            && tx.get_session(&candidate)?.is_none()
        {
            break candidate;
        }
        number += 1;
    };
    tx.fork_session(parent, &branch, at, now_ms)?;
    let tags: Vec<_> = tx
        .tags(parent)?
        .into_iter()
        .filter(|assignment| assignment.unit.ordinal < at)
        .collect();
    tx.insert_tags(&branch, &tags)?;
    let kept: Vec<TagNo> = tx
        .drop_state(parent)?
        .landed
        .into_iter()
        .filter(|tag| tags.iter().any(|assignment| assignment.tag == *tag))
        .collect();
    for &tag in &kept {
        tx.queue_drop(&branch, tag, INHERITED, now_ms)?;
    }
    tx.land_drops(&branch, &kept, 0)?;
    // The history summarised before the fork point is the branch's too; its first pass
    // folds it into its own head.
    let summarised: Vec<_> = tx
        .compartments(parent)?
        .into_iter()
        .filter(|compartment| compartment.end_ordinal < at)
        .collect();
    tx.append_compartments(&branch, &summarised, now_ms)?;
    // A provisional compartment stays provisional on the branch: its own runs read it again.
    let parent_open = tx.provisional_start(parent)?;
    if let Some(last) = summarised.last()
        && parent_open == Some(last.start_ordinal)
    {
        tx.mark_provisional(&branch, last.start_ordinal)?;
    }
    if let Some(parent_state) = load_state(tx, parent)? {
        store_state(tx, &branch, &inherited_state(&parent_state, &tags, at))?;
    }
    Ok(branch)
}

/// What a branch of `parent` keeps of its state: the reductions of the first `at` messages
/// and the proven window; the head, the pass history and the usage reports start over.
fn inherited_state(
    parent: &EngineState,
    tags: &[mc_core::tags::TagAssignment],
    at: u64,
) -> EngineState {
    let mut state = EngineState {
        proven_window: parent.proven_window,
        dropped_reasoning: parent
            .dropped_reasoning
            .iter()
            .copied()
            .filter(|&(ordinal, _)| ordinal < at)
            .collect(),
        ..EngineState::default()
    };
    state.reshape.excerpts = parent
        .reshape
        .excerpts
        .iter()
        .filter(|&(tag, _)| tags.iter().any(|assignment| assignment.tag == *tag))
        .map(|(&tag, &keep)| (tag, keep))
        .collect();
    state.reshape.clipped_calls = parent
        .reshape
        .clipped_calls
        .iter()
        .copied()
        .filter(|call| call.ordinal < at)
        .collect();
    state.shown_tokens = parent
        .shown_tokens
        .iter()
        .filter(|(key, _)| {
            key.split_once(':')
                .and_then(|(ordinal, _)| ordinal.parse::<u64>().ok())
                .is_some_and(|ordinal| ordinal < at)
        })
        .map(|(key, &tokens)| (key.clone(), tokens))
        .collect();
    state
}

/// `parent` without its `~N` branch suffix.
fn base_of(parent: &SessionId) -> SessionId {
    match parent.as_str().rsplit_once(BRANCH_SEPARATOR) {
        Some((base, number)) if !base.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) => {
            SessionId::new(base).unwrap_or_else(|_| parent.clone())
        }
        _ => parent.clone(),
    }
}
