//! Other projects' shared memories as `ctx_memory` sees them: readable, never editable.
//!
//! A workspace lets its members read each other's memories of the shared categories; each
//! memory still belongs to its own project, whose sessions curate it. So `get` and `list`
//! show them, marked with their project, and `update`, `archive` and `merge` refuse them
//! with an answer that names the owner. A memory of a category the workspace does not share
//! stays "not found", as any other project's memory does.

use mc_core::head::MemoryCategory;
use mc_core::workspace::SharedSource;
use mc_store::{MemoryStatus, ProjectKnowledge, StoreError, StoredMemory};

use super::ToolAnswer;

/// A shared memory and the project it comes from.
pub(super) struct SharedHit<'a> {
    source: &'a SharedSource,
    memory: StoredMemory,
}

/// Shared memory `id`, when one of `sources` owns it in a category it shares.
pub(super) fn find_shared<'a>(
    tx: &dyn ProjectKnowledge,
    sources: &'a [SharedSource],
    id: u64,
) -> Result<Option<SharedHit<'a>>, StoreError> {
    for source in sources {
        if let Some(memory) = tx.memory(&source.project, id)?
            && source.shares(memory.record.category)
        {
            return Ok(Some(SharedHit { source, memory }));
        }
    }
    Ok(None)
}

/// The refusal of `action` on a shared memory: whose it is and what to do instead.
pub(super) fn read_only(hit: &SharedHit<'_>, action: &str) -> ToolAnswer {
    ToolAnswer::error(format!(
        "memory {} belongs to project {} (shared through workspace `{}`) and is read-only \
         here; {action} it from a session of that project, or write this project's own \
         memory with action write",
        hit.memory.id, hit.source.root, hit.source.workspace
    ))
}

/// One line of `get` and `list`, like an own memory's with its project named.
pub(super) fn shared_line(hit: &SharedHit<'_>) -> String {
    let memory = &hit.memory;
    format!(
        "[{}] {} ({}, shared by {}, read-only): {}\n",
        memory.id,
        memory.record.category.as_str(),
        memory.record.status.as_str(),
        hit.source.root,
        memory.record.content
    )
}

/// The live shared memories of `category` (every shared category when `None`), by source
/// then id, as `list` shows them.
pub(super) fn shared_lines(
    tx: &dyn ProjectKnowledge,
    sources: &[SharedSource],
    category: Option<MemoryCategory>,
) -> Result<String, StoreError> {
    let live = [MemoryStatus::Active, MemoryStatus::Permanent];
    let mut out = String::new();
    for source in sources {
        for memory in tx.memories(&source.project, &live)? {
            let category_ok = category.is_none_or(|wanted| memory.record.category == wanted);
            if category_ok && source.shares(memory.record.category) {
                out.push_str(&shared_line(&SharedHit { source, memory }));
            }
        }
    }
    Ok(out)
}
