//! Why a pass busts the cache, as recorded in the ledger.

use serde::Serialize;

/// The reason a pass was allowed (or required) to change cached bytes.
///
/// Variants are listed from the permissions (a bust is allowed) to the fold triggers (a hard
/// fold is required); the ledger stores the snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BustCause {
    /// Usage reached the execute threshold and the bust pays for itself (or the force band
    /// is reached within the planning horizon anyway).
    ExecuteThreshold,
    /// The session was idle at least the cache TTL: the provider's cache is already gone.
    CacheExpired,
    /// The operator asked for queued work to land.
    OperatorFlush,
    /// Usage reached the force band: busts whatever the economics say.
    ForceBand,
    /// `m[0]` has never been rendered in this session.
    FirstRender,
    /// The request names another model: its cache is separate, so nothing is cached.
    ModelChanged,
    /// The system prompt or tools changed: every cached byte after them is gone.
    SystemChanged,
    /// Structural history edits changed `m[0]`'s own content.
    StructuralEdit,
    /// `m[1]` grew past the refold backstop (`HistoryConfig::m1_refold`).
    M1Backstop,
    /// Usage reached the refusal level of a provider-proven window and there is still
    /// something to fold or drop.
    Emergency,
}

impl BustCause {
    /// Whether this cause requires a hard fold rather than merely permitting a bust.
    pub const fn requires_fold(self) -> bool {
        match self {
            Self::CacheExpired
            | Self::FirstRender
            | Self::ModelChanged
            | Self::SystemChanged
            | Self::StructuralEdit
            | Self::M1Backstop => true,
            Self::ExecuteThreshold | Self::OperatorFlush | Self::ForceBand | Self::Emergency => {
                false
            }
        }
    }
}
