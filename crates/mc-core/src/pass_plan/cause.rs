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
    /// Below the execute threshold, the bust removes enough (history the historian
    /// summarised, queued drops) to pay back its rewrite within the working-set horizon.
    WorkingSet,
}

impl BustCause {
    /// The ledger's name (the snake_case serde name).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ExecuteThreshold => "execute_threshold",
            Self::CacheExpired => "cache_expired",
            Self::OperatorFlush => "operator_flush",
            Self::ForceBand => "force_band",
            Self::FirstRender => "first_render",
            Self::ModelChanged => "model_changed",
            Self::SystemChanged => "system_changed",
            Self::StructuralEdit => "structural_edit",
            Self::M1Backstop => "m1_backstop",
            Self::Emergency => "emergency",
            Self::WorkingSet => "working_set",
        }
    }

    /// Whether this cause requires a hard fold rather than merely permitting a bust.
    pub const fn requires_fold(self) -> bool {
        match self {
            Self::CacheExpired
            | Self::FirstRender
            | Self::ModelChanged
            | Self::SystemChanged
            | Self::StructuralEdit
            | Self::M1Backstop => true,
            Self::ExecuteThreshold
            | Self::OperatorFlush
            | Self::ForceBand
            | Self::Emergency
            | Self::WorkingSet => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serde_names() {
        let all = [
            BustCause::ExecuteThreshold,
            BustCause::CacheExpired,
            BustCause::OperatorFlush,
            BustCause::ForceBand,
            BustCause::FirstRender,
            BustCause::ModelChanged,
            BustCause::SystemChanged,
            BustCause::StructuralEdit,
            BustCause::M1Backstop,
            BustCause::Emergency,
            BustCause::WorkingSet,
        ];
        for cause in all {
            assert_eq!(serde_json::to_value(cause).unwrap(), cause.as_str());
        }
    }
}
