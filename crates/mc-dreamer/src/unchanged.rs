//! A verdict applies only to the memory the model was shown.
//!
//! The lease keeps two dreamers apart, but an operator or an agent may edit or archive a
//! memory while a model call is out; applying a verdict about the old text would overwrite
//! their edit. So each change is checked, inside its write transaction, against the text
//! the task read, and skipped when the memory moved on.

use mc_core::ProjectId;
use mc_store::{MemoryMaintenance, MemoryStatus};

/// Whether memory `id` is still active and says `seen`, as the task read it.
pub fn is_unchanged(
    memories: &dyn MemoryMaintenance,
    project: &ProjectId,
    id: u64,
    seen: &str,
) -> mc_store::Result<bool> {
    let current = memories.memory(project, id)?;
    let unchanged = current.is_some_and(|memory| {
        memory.record.status == MemoryStatus::Active && memory.record.content == seen
    });
    if !unchanged {
        tracing::info!(
            memory = id,
            "dreamer: the memory changed since it was read; verdict not applied"
        );
    }
    Ok(unchanged)
}
