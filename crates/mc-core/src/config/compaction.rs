//! Whether the engine manages the window itself or leaves that to the host.

use serde::Serialize;

/// The compaction section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompactionConfig {
    /// The engine manages the window: tags, drops, the historian's compartments in the
    /// head. `false` leaves the window to the host's own compaction and keeps only
    /// memories, project docs, notes, search and expand, with every message sent as the
    /// client sent it (the "compaction off" session mode). On by default: keeping a long
    /// session inside the window without a compaction pause is what the engine is for.
    pub enabled: bool,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self { enabled: true }
    }
}
