//! Project memory in the head: every live memory of the session's project in `m[0]` (within
//! the memory budget) as of the last hard fold, and the changes logged since then in `m[1]`.
//!
//! Memories change in the background (the historian's facts, the agent's tool, the operator's
//! command line); none of that busts the cache by itself. A change appears in `m[1]` on the
//! session's next soft bust and in `m[0]` on its next hard fold. The one exception is an edit
//! the operator makes outside the session to a memory `m[0]` already states: the model would
//! keep seeing the old wording in the baseline, so the next pass that may change bytes folds.

use mc_core::head::{Memory, MemoryChange};
use mc_core::workspace::{SharedSource, Workspaces};
use mc_core::{ProjectId, SessionId};
use mc_store::{MemoryAction, MemorySource, MemoryStatus, ProjectKnowledge, StoredMemory, WriteTx};

use crate::error::Result;
use crate::state::EngineState;
use crate::workspace_memory::shared_operator_edit;

const LIVE: &[MemoryStatus] = &[MemoryStatus::Active, MemoryStatus::Permanent];

/// The memory changes logged since `m[0]` was rendered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct MemoryDelta {
    /// The session's project, when it has one.
    pub project: Option<ProjectId>,
    /// What `m[1]` shows, in log order.
    pub changes: Vec<MemoryChange>,
    /// The operator changed or retired a memory `m[0]` shows, the project's own or one
    /// another project shares with it.
    pub operator_edit: bool,
    /// The other projects whose memories the project's workspaces share with it.
    pub shared: Vec<SharedSource>,
}

/// The session's project as stored (a session keeps the first project it was given).
pub(crate) fn session_project(tx: &WriteTx<'_>, session: &SessionId) -> Result<Option<ProjectId>> {
    Ok(tx.get_session(session)?.and_then(|record| record.project))
}

/// The changes to show in `m[1]`: the project's memory log after the entry `m[0]` was
/// rendered at. A change to a memory that no longer exists in the project is skipped.
/// Shared memories show no changes here (`workspace_memory.rs` says why), but an
/// operator's edit of one `m[0]` shows counts like one of the project's own.
pub(crate) fn memory_delta(
    tx: &dyn ProjectKnowledge,
    project: Option<ProjectId>,
    state: &EngineState,
    workspaces: &Workspaces,
) -> Result<MemoryDelta> {
    let Some(project) = project else {
        return Ok(MemoryDelta::default());
    };
    let shared = workspaces.shared_with(&project);
    let entries = tx.memory_log_since(&project, state.m0_memory_log)?;
    let mut changes = Vec::with_capacity(entries.len());
    let mut operator_edit = false;
    for entry in entries {
        let Some(memory) = tx.memory(&project, entry.memory_id)? else {
            continue;
        };
        let shown_in_m0 = state.m0_memory_ids.contains(&entry.memory_id);
        if entry.action != MemoryAction::Added
            && entry.actor == Some(MemorySource::Operator)
            && shown_in_m0
            && state.head_rendered
        {
            operator_edit = true;
        }
        changes.push(match entry.action {
            MemoryAction::Added => MemoryChange::Added(head_memory(&memory)),
            MemoryAction::Changed => MemoryChange::Changed {
                id: memory.id,
                category: memory.record.category,
                content: memory.record.content.clone(),
            },
            MemoryAction::Superseded => match memory.superseded_by {
                Some(by) => MemoryChange::Superseded { id: memory.id, by },
                None => MemoryChange::Removed { id: memory.id },
            },
            MemoryAction::Archived => MemoryChange::Removed { id: memory.id },
        });
    }
    if !operator_edit {
        operator_edit = shared_operator_edit(tx, &shared, state)?;
    }
    Ok(MemoryDelta {
        project: Some(project),
        changes,
        operator_edit,
        shared,
    })
}

/// Every live memory of the project, for a hard fold, and the log position it reflects.
pub(crate) fn memories_for_fold(
    tx: &dyn ProjectKnowledge,
    project: Option<&ProjectId>,
) -> Result<(Vec<Memory>, u64)> {
    let Some(project) = project else {
        return Ok((Vec::new(), 0));
    };
    let memories = tx.memories(project, LIVE)?;
    let log_head = tx.memory_log_head(project)?;
    Ok((memories.iter().map(head_memory).collect(), log_head))
}

pub(crate) fn head_memory(memory: &StoredMemory) -> Memory {
    Memory {
        id: memory.id,
        category: memory.record.category,
        content: memory.record.content.clone(),
        permanent: memory.record.status == MemoryStatus::Permanent,
        seen_count: memory.record.seen_count,
    }
}
