//! Forking a session when a client rewinds or edits its history.
//!
//! The branch starts with copies of the shared prefix (messages and their tags, so every
//! unit keeps its number) and fresh engine state: its first pass renders the head anew, as
//! the provider has never seen this conversation. Queued drops stay with the original.

use mc_core::SessionId;
use mc_store::{BRANCH_SEPARATOR, WriteTx};

use crate::error::{EngineError, Result};
use crate::pass::Engine;

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
        if taken.iter().all(|branch| branch.session.id != candidate) {
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
    Ok(branch)
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
