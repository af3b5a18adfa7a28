//! Budgets for what is brought back into the window: memories and expanded transcripts.

use serde::Serialize;

use super::units::{Bounds, Tokens};

/// Project memory injection (DESIGN §5 "Memory").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryConfig {
    /// Most tokens of project memories rendered into `m[0]`; the rest stay searchable.
    /// 4,000 keeps the rules and constraints visible without crowding out history.
    pub injection_budget_tokens: Tokens,
}

impl MemoryConfig {
    /// Accepted [`Self::injection_budget_tokens`]; 0 turns injection off.
    pub const INJECTION_BUDGET_TOKENS: Bounds = Bounds::tokens(0, 100_000);
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            injection_budget_tokens: Tokens(4_000),
        }
    }
}

/// `ctx_expand` and `magic-context expand` (DESIGN §5 "Expand").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExpandConfig {
    /// Most tokens one expand call returns, so recalling old transcript cannot flood the
    /// window it was summarised to protect.
    pub cap_tokens: Tokens,
}

impl ExpandConfig {
    /// Accepted [`Self::cap_tokens`].
    pub const CAP_TOKENS: Bounds = Bounds::tokens(1_000, 200_000);
}

impl Default for ExpandConfig {
    fn default() -> Self {
        Self {
            cap_tokens: Tokens(15_000),
        }
    }
}
