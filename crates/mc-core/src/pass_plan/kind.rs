//! The plan a pass runs under: its kind, why, and whether anything may change bytes.

use serde::Serialize;

use super::cause::BustCause;
use super::refusal::Refusal;

/// What a pass does to the cached prefix (DESIGN §5 "Pass kinds").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PassKind {
    /// Defer: nothing lands; every byte before the new tail equals the previous request.
    CacheHit,
    /// `m[1]` re-renders and queued drops land; `m[0]` and everything before it stay
    /// byte-identical.
    SoftBust,
    /// `m[0]` is re-materialised with `m[1]` folded in and `m[1]` reset to its placeholder;
    /// everything queued drains into this pass and decay re-tiers.
    HardFold,
}

impl PassKind {
    /// The ledger's name (the snake_case serde name).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::CacheHit => "cache_hit",
            Self::SoftBust => "soft_bust",
            Self::HardFold => "hard_fold",
        }
    }

    /// Whether a pass of this kind may change bytes the provider has cached. Every mutation
    /// lane checks this (through [`PassPlan::may_mutate`]); a cache hit never mutates.
    pub const fn may_mutate(self) -> bool {
        match self {
            Self::CacheHit => false,
            Self::SoftBust | Self::HardFold => true,
        }
    }
}

/// The one bust permission for a pass, with its reasons for the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PassPlan {
    /// What this pass does to the cached prefix.
    pub kind: PassKind,
    /// Why it busts; `None` exactly for a cache hit. For a hard fold this is what required
    /// the fold; the permission that let it happen is in [`Self::reasons`].
    pub cause: Option<BustCause>,
    /// `true` exactly for [`PassKind::SoftBust`] and [`PassKind::HardFold`]: queued drops,
    /// `m[1]` refresh, automatic reclaim and byte-changing nudges may run only then.
    pub may_mutate: bool,
    /// Usage is in the force band (or at the refusal level of a proven window with something
    /// left to fold): queued work lands whatever the historian is doing and emergency reclaim
    /// runs. Protected tags stay protected. Always implies [`Self::may_mutate`].
    pub force: bool,
    /// Set when the request must not be sent: a provider-proven limit is nearly reached and
    /// nothing is left to fold. The engine checks this before anything else.
    pub refuse: Option<Refusal>,
    /// Human-readable reasons, in the order they were weighed, for the ledger and logs.
    pub reasons: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serde_names() {
        for kind in [PassKind::CacheHit, PassKind::SoftBust, PassKind::HardFold] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }
}
