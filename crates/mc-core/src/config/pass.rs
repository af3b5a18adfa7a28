//! When a pass may bust the cache, as shares of the usable window (DESIGN §5, §9).

use std::collections::BTreeMap;

use serde::Serialize;

use super::model_match::override_for;
use super::units::{Bounds, Percent, Tokens};

/// The usage levels that gate busting.
///
/// Usage is input + cache read + cache write tokens of the last response divided by the usable
/// window (the context window minus the output reserve).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PassConfig {
    /// Usage (percent of the usable window) at or above which queued work may bust the cache.
    /// 65% leaves room for several turns of growth before the force band while busting rarely
    /// enough that the cached prefix pays for itself.
    pub execute_threshold_percent: Percent,
    /// Per-model execute threshold, keyed by model id or id prefix (the longest matching
    /// prefix wins): a percent, or an absolute token count for models whose real window is
    /// smaller than advertised.
    pub execute_threshold_by_model: BTreeMap<String, ExecuteThreshold>,
    /// Percent of the usable window (and of a provider-proven limit) at which landing work
    /// becomes urgent: any work that frees tokens lands, paying or not, since the next
    /// request may overflow. (A request is refused only when even its minimal rendering is
    /// over the limit.)
    pub refusal_percent: Percent,
    /// A working set smaller than the window: the engine plans against at most this many
    /// tokens whatever the model's window, for users who want smaller, cheaper prompts.
    pub working_set_tokens: Option<Tokens>,
    /// Below the execute threshold, a bust is still taken when what it removes, re-read as
    /// many more turns as the cycle since the last bust lasted (at most this many), outweighs
    /// rewriting the prefix at the write price and what the cycle already read (0 turns it
    /// off). Chosen by replay: see `economics::WORKING_SET_HORIZON_TURNS`.
    pub working_set_horizon_turns: u32,
}

impl PassConfig {
    /// Accepted execute thresholds: below 20% the session busts constantly, above 90% the
    /// force band leaves no room to fold before the window is full.
    pub const EXECUTE_THRESHOLD_PERCENT: Bounds = Bounds::percent(20, 90);
    /// Accepted absolute execute thresholds.
    pub const EXECUTE_THRESHOLD_TOKENS: Bounds = Bounds::tokens(1_000, 10_000_000);
    /// Accepted refusal levels: never below the highest force band (92%).
    pub const REFUSAL_PERCENT: Bounds = Bounds::percent(92, 100);
    /// Accepted working sets: below 8K tokens no coding agent's system prompt fits.
    pub const WORKING_SET_TOKENS: Bounds = Bounds::tokens(8_000, 10_000_000);
    /// Accepted working-set horizons, in turns (0 = no busts below the execute threshold).
    pub const WORKING_SET_HORIZON_TURNS: Bounds = Bounds::count(0, 1_000, "turns");

    /// The usable window to plan against: the request's, capped by the working set.
    pub fn planned_window(&self, usable_window: Option<Tokens>) -> Option<Tokens> {
        match (usable_window, self.working_set_tokens) {
            (Some(usable), Some(working)) => Some(usable.min(working)),
            (usable, working) => usable.or(working),
        }
    }
    /// The force band never starts below this percent of the usable window.
    pub const FORCE_BAND_FLOOR: Percent = Percent::saturating(85);
    /// The force band starts at least this many points above the execute threshold, so a
    /// pass between the two still has a chance to bust politely first.
    pub const FORCE_BAND_MARGIN: u8 = 2;

    /// The execute threshold that applies to `model`.
    pub fn execute_threshold_for(&self, model: &str) -> ExecuteThreshold {
        override_for(&self.execute_threshold_by_model, model)
            .copied()
            .unwrap_or(ExecuteThreshold::Percent(self.execute_threshold_percent))
    }

    /// Where the force band starts for an execute threshold of `execute`:
    /// max(85%, execute + 2 points), at most 100%.
    ///
    /// At the force band queued work and emergency reclaim apply whatever the historian is
    /// doing (DESIGN §5). A token threshold is first turned into a percent of the usable
    /// window with [`ExecuteThreshold::percent_of`].
    pub fn force_band_percent(execute: Percent) -> Percent {
        let above = execute.get().saturating_add(Self::FORCE_BAND_MARGIN);
        Percent::saturating(above).max(Self::FORCE_BAND_FLOOR)
    }
}

impl Default for PassConfig {
    fn default() -> Self {
        Self {
            execute_threshold_percent: Percent::saturating(65),
            execute_threshold_by_model: BTreeMap::new(),
            refusal_percent: Percent::saturating(95),
            working_set_tokens: None,
            working_set_horizon_turns: crate::pass_plan::economics::WORKING_SET_HORIZON_TURNS,
        }
    }
}

/// An execute threshold: a share of the usable window, or an absolute token count.
///
/// Written `{"percent": 70}` or `{"tokens": 150000}` in config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecuteThreshold {
    /// Percent of the usable window.
    Percent(Percent),
    /// Absolute usage in tokens.
    Tokens(Tokens),
}

impl ExecuteThreshold {
    /// The threshold as a percent of `usable_window`, rounded down and capped at 100%; an
    /// unknown (zero) window makes a token threshold 100%, so it never fires early.
    pub fn percent_of(self, usable_window: Tokens) -> Percent {
        match self {
            Self::Percent(percent) => percent,
            Self::Tokens(tokens) => {
                if usable_window.get() == 0 {
                    return Percent::MAX;
                }
                let share = tokens.get().saturating_mul(100) / usable_window.get();
                Percent::saturating(u8::try_from(share.min(100)).unwrap_or(100))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pct(value: u64) -> Percent {
        Percent::new(value).unwrap()
    }

    #[test]
    fn force_band_is_max_of_floor_and_margin() {
        assert_eq!(PassConfig::force_band_percent(pct(65)), pct(85));
        assert_eq!(PassConfig::force_band_percent(pct(83)), pct(85));
        assert_eq!(PassConfig::force_band_percent(pct(84)), pct(86));
        assert_eq!(PassConfig::force_band_percent(pct(90)), pct(92));
        assert_eq!(PassConfig::force_band_percent(pct(100)), pct(100));
    }

    #[test]
    fn refusal_stays_above_every_force_band() {
        let highest = PassConfig::EXECUTE_THRESHOLD_PERCENT.max;
        let band = PassConfig::force_band_percent(pct(highest));
        assert_eq!(u64::from(band.get()), PassConfig::REFUSAL_PERCENT.min);
    }

    #[test]
    fn model_override_and_token_thresholds() {
        let mut config = PassConfig::default();
        config.execute_threshold_by_model.insert(
            "gpt-5".to_owned(),
            ExecuteThreshold::Tokens(Tokens(150_000)),
        );
        assert_eq!(
            config.execute_threshold_for("claude-opus-4-5"),
            ExecuteThreshold::Percent(pct(65))
        );
        let gpt = config.execute_threshold_for("gpt-5-codex");
        assert_eq!(gpt, ExecuteThreshold::Tokens(Tokens(150_000)));
        assert_eq!(gpt.percent_of(Tokens(200_000)), pct(75));
        assert_eq!(gpt.percent_of(Tokens(100_000)), pct(100));
        assert_eq!(gpt.percent_of(Tokens(0)), pct(100));
        assert_eq!(serde_json::to_string(&gpt).unwrap(), r#"{"tokens":150000}"#);
    }
}
