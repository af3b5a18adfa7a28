//! How much of the window rendered history (`m[0]` and `m[1]`) may take, and when `m[1]` folds.

use serde::Serialize;

use super::units::{Bounds, Percent, Tokens};

/// History budget and the `m[1]` refold backstop (DESIGN §5, §9).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistoryConfig {
    /// Share of the usable window the decay renderer may fill with compartment history.
    ///
    /// The budget buys narrative only: every tier but the bare title keeps the user's own
    /// words, and the newest compartments keep their index (files, commands, names), so what
    /// a smaller budget fades is the older summaries' prose, which `ctx_expand` brings back.
    /// Every bust rewrites the head and every call reads it, so it is paid for on each turn.
    /// Chosen by replay (`replay --sweep history.budget_percent=...`, controlled cost against
    /// autocompact / references kept, user words 1.0 in every cell): swe set at 200K 3% 0.875
    /// / 0.985, 4% 0.879 / 0.987, 5% 0.881 / 0.989, 6% 0.882 / 0.989, 15% 0.886 / 0.989; at
    /// 64K 1.084 / 0.956, 1.096 / 0.965, 1.107 / 0.969, 1.114 / 0.971, 1.137 / 0.985; the long
    /// generated sessions at 200K (mean of seeds 1, 2, 3, 7; references >= 0.9925 from 3% up,
    /// 0.95-0.97 at 2%) 0.742, 0.752, 0.764, 0.769, 0.792. 5% keeps the references of 15% at
    /// 200K for a smaller head everywhere.
    pub budget_percent: Percent,
    /// History budget in tokens when the model's window is unknown; 20K is 5% of a
    /// 400K-token window, safe for every current frontier model.
    pub budget_tokens_unknown_window: Tokens,
    /// When a large `m[1]` forces a hard fold into `m[0]`.
    pub m1_refold: M1RefoldConfig,
}

impl HistoryConfig {
    /// Accepted [`Self::budget_percent`].
    pub const BUDGET_PERCENT: Bounds = Bounds::percent(1, 50);
    /// Accepted [`Self::budget_tokens_unknown_window`].
    pub const BUDGET_TOKENS_UNKNOWN_WINDOW: Bounds = Bounds::tokens(1_000, 1_000_000);

    /// The history budget for a usable window of `usable_window` tokens, or the fixed budget
    /// when the window is unknown.
    pub fn budget_tokens(&self, usable_window: Option<Tokens>) -> Tokens {
        match usable_window {
            Some(window) => self.budget_percent.of(window),
            None => self.budget_tokens_unknown_window,
        }
    }
}

impl Default for HistoryConfig {
    fn default() -> Self {
        Self {
            budget_percent: Percent::saturating(5),
            budget_tokens_unknown_window: Tokens(20_000),
            m1_refold: M1RefoldConfig::default(),
        }
    }
}

/// The `m[1]` backstop: `m[1]` folds into `m[0]` on the next bust when any limit is passed.
///
/// `m[1]` is re-sent after the cached `m[0]` on every soft bust; once it is large, folding it
/// costs less than carrying it (DESIGN §5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct M1RefoldConfig {
    /// Fold when `m[1]` is over this percent of the history budget.
    pub history_budget_percent: Percent,
    /// Fold when `m[1]` is over this percent of `m[0]` (only once `m[0]` reaches
    /// [`Self::m0_min_tokens`]).
    pub m0_percent: Percent,
    /// Size `m[0]` must reach before [`Self::m0_percent`] applies; a tiny fresh `m[0]` would
    /// otherwise fold on every new compartment.
    pub m0_min_tokens: Tokens,
    /// Fold when `m[1]` lists more memory updates than this.
    pub max_memory_updates: u32,
}

impl M1RefoldConfig {
    /// Accepted [`Self::history_budget_percent`] and [`Self::m0_percent`].
    pub const PERCENT: Bounds = Bounds::percent(1, 100);
    /// Accepted [`Self::m0_min_tokens`].
    pub const M0_MIN_TOKENS: Bounds = Bounds::tokens(0, 1_000_000);
    /// Accepted [`Self::max_memory_updates`].
    pub const MAX_MEMORY_UPDATES: Bounds = Bounds::count(1, 10_000, "memory updates");
}

impl Default for M1RefoldConfig {
    fn default() -> Self {
        Self {
            history_budget_percent: Percent::saturating(20),
            m0_percent: Percent::saturating(15),
            m0_min_tokens: Tokens(500),
            max_memory_updates: 40,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_follows_the_window() {
        let config = HistoryConfig::default();
        assert_eq!(config.budget_tokens(Some(Tokens(200_000))), Tokens(10_000));
        assert_eq!(config.budget_tokens(None), Tokens(20_000));
    }
}
