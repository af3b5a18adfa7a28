//! Other projects' shared memories in the head: what a hard fold shows of them, and when an
//! edit of one makes `m[0]` stale.
//!
//! A member of a workspace reads the other members' live memories of the shared categories
//! ([`Workspaces::shared_with`]). They enter `m[0]` only when it is rebuilt anyway, by the
//! same rule as the project's own memories: another project's historian, dreamer or agent
//! writing a memory never rewrites this session's cached prefix, and never grows its `m[1]`
//! either (the other project's churn would otherwise push this session towards refolds it
//! did not earn). The one exception is the own memories' exception: the operator edits or
//! retires a shared memory `m[0]` states, which the model would otherwise keep reading in
//! its old wording, so the next pass allowed to change bytes folds.
//!
//! [`Workspaces::shared_with`]: mc_core::workspace::Workspaces::shared_with

use mc_core::head::SharedMemories;
use mc_core::workspace::SharedSource;
use mc_store::{MemoryAction, MemorySource, MemoryStatus, ProjectKnowledge};

use crate::error::Result;
use crate::head_memory::head_memory;
use crate::state::EngineState;

const LIVE: &[MemoryStatus] = &[MemoryStatus::Active, MemoryStatus::Permanent];

/// Every source's live memories of the shared categories, for a hard fold, and the log
/// position they reflect (the newest entry of any source's log: edits after it are news).
pub(crate) fn shared_for_fold(
    tx: &dyn ProjectKnowledge,
    sources: &[SharedSource],
) -> Result<(Vec<SharedMemories>, u64)> {
    let mut shared = Vec::with_capacity(sources.len());
    let mut log_head = 0;
    for source in sources {
        log_head = log_head.max(tx.memory_log_head(&source.project)?);
        let memories = tx
            .memories(&source.project, LIVE)?
            .iter()
            .filter(|memory| source.shares(memory.record.category))
            .map(head_memory)
            .collect();
        shared.push(SharedMemories {
            workspace: source.workspace.clone(),
            project: source.root.clone(),
            memories,
        });
    }
    Ok((shared, log_head))
}

/// Whether the operator changed, superseded or archived a shared memory `m[0]` shows since
/// it was rendered.
pub(crate) fn shared_operator_edit(
    tx: &dyn ProjectKnowledge,
    sources: &[SharedSource],
    state: &EngineState,
) -> Result<bool> {
    if state.m0_shared_memory_ids.is_empty() || !state.head_rendered {
        return Ok(false);
    }
    for source in sources {
        let edited = tx
            .memory_log_since(&source.project, state.m0_shared_memory_log)?
            .iter()
            .any(|entry| {
                entry.action != MemoryAction::Added
                    && entry.actor == Some(MemorySource::Operator)
                    && state.m0_shared_memory_ids.contains(&entry.memory_id)
            });
        if edited {
            return Ok(true);
        }
    }
    Ok(false)
}
