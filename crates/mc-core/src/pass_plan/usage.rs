//! How full the window is, measured against the execute threshold and the force band.

use crate::config::{ExecuteThreshold, PassConfig, Percent, Tokens};

use super::inputs::PassInputs;

/// The most output tokens kept free in the window for the answer, as Claude Code does.
const MAX_OUTPUT_RESERVE_TOKENS: u64 = 20_000;

/// The tokens kept free in the window for the answer: `min(max output, 20K)`. The usable
/// window that thresholds are shares of is the context window minus this.
pub fn output_reserve_tokens(max_output_tokens: u64) -> u64 {
    max_output_tokens.min(MAX_OUTPUT_RESERVE_TOKENS)
}

/// The least the engine keeps free for the answer when planning, whatever the window: the
/// same floor the proxy keeps when it lowers a request's `max_tokens` to the room left.
pub const MIN_PLANNING_RESERVE_TOKENS: u64 = 4_096;

/// The tokens the engine keeps free for the answer when it plans against a `window`: a tenth
/// of the window, at most 20K and at most what the request allows (`max_output_tokens`),
/// never below [`MIN_PLANNING_RESERVE_TOKENS`] nor the request's thinking budget.
///
/// [`output_reserve_tokens`] (Claude Code's own reserve, 20K whatever the window) left
/// nothing of a 40K window once a coding agent's ~20K of system prompt and tools were in; a
/// reserve that shrinks with the window keeps the usable share sensible (36K of 40K, 180K of
/// 200K as before), and the proxy lowers `max_tokens` to the room left when a prompt nears
/// the window, so the answer never competes with the prompt for the same tokens.
pub fn planning_reserve_tokens(
    window: u64,
    max_output_tokens: Option<u64>,
    thinking_budget: u64,
) -> u64 {
    (window / 10)
        .min(MAX_OUTPUT_RESERVE_TOKENS)
        .min(max_output_tokens.unwrap_or(u64::MAX))
        .max(MIN_PLANNING_RESERVE_TOKENS)
        .max(thinking_budget)
}

/// The usable window the engine plans against: `window` minus [`planning_reserve_tokens`].
pub fn usable_window(window: u64, max_output_tokens: Option<u64>, thinking_budget: u64) -> u64 {
    window.saturating_sub(planning_reserve_tokens(
        window,
        max_output_tokens,
        thinking_budget,
    ))
}

/// Usage of this request against the thresholds that gate busting (DESIGN §9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsageLevel {
    /// The larger of the last response's usage (input + cache read + cache write) and the
    /// estimate of this request: a single turn that adds a large tool result must reach the
    /// threshold on this pass, not one request too late.
    pub usage_tokens: Tokens,
    /// The usable window, `None` when unknown (or zero).
    pub usable_window: Option<Tokens>,
    /// The execute threshold for the model.
    pub execute: ExecuteThreshold,
    /// The force band, as a percent of the usable window.
    pub force_percent: Percent,
    /// Usage is at or above the execute threshold (always so in the force band).
    pub execute_reached: bool,
    /// Usage is at or above the force band.
    pub force_reached: bool,
    /// Usage is at the ceiling: `refusal_percent` (95%) of the usable window. Past it the
    /// request is about to overflow, so any work that frees tokens lands, paying or not.
    pub ceiling_reached: bool,
}

impl UsageLevel {
    /// Whether `tokens` is at or above the force band (never when the window is unknown).
    pub fn reaches_force_band(&self, tokens: Tokens) -> bool {
        reaches(tokens, self.force_percent, self.usable_window)
    }

    /// One line for the plan's reasons.
    pub fn describe(&self) -> String {
        let usage = self.usage_tokens.get();
        let execute = match self.execute {
            ExecuteThreshold::Percent(percent) => format!("execute threshold {percent}"),
            ExecuteThreshold::Tokens(tokens) => format!("execute threshold {tokens}"),
        };
        match self.usable_window {
            Some(window) => {
                let share = u128::from(usage) * 100 / u128::from(window.get());
                format!(
                    "usage {usage} tokens = {share}% of the {} usable window ({execute}, force band {})",
                    window.get(),
                    self.force_percent
                )
            }
            None => format!("usage {usage} tokens, usable window unknown ({execute})"),
        }
    }
}

/// Measures usage for `model`.
///
/// The engine calls this before planning reclaim, so emergency reclaim can be sized for a
/// pass in the force band; [`super::plan_pass`] measures the same way.
pub fn measure_usage(inputs: &PassInputs, pass: &PassConfig, model: &str) -> UsageLevel {
    let usage_tokens = inputs.last_usage_tokens.max(inputs.prompt_tokens_estimate);
    let usable_window = inputs.usable_window.filter(|window| window.get() > 0);
    let execute = pass.execute_threshold_for(model);
    let execute_percent = execute.percent_of(usable_window.unwrap_or(Tokens(0)));
    let force_percent = PassConfig::force_band_percent(execute_percent);
    let force_reached = reaches(usage_tokens, force_percent, usable_window);
    // A token threshold above the window caps the force band at 100%; usage in the force
    // band is then past the execute threshold too, whatever the token count says.
    let execute_reached = force_reached
        || match execute {
            ExecuteThreshold::Percent(percent) => reaches(usage_tokens, percent, usable_window),
            ExecuteThreshold::Tokens(tokens) => usage_tokens >= tokens,
        };
    UsageLevel {
        usage_tokens,
        usable_window,
        execute,
        force_percent,
        execute_reached,
        force_reached,
        ceiling_reached: reaches(usage_tokens, pass.refusal_percent, usable_window),
    }
}

/// `tokens` is at least `percent` of `window`, compared exactly (no rounding of the limit).
pub(super) fn reaches(tokens: Tokens, percent: Percent, window: Option<Tokens>) -> bool {
    window.is_some_and(|window| {
        u128::from(tokens.get()) * 100 >= u128::from(percent.get()) * u128::from(window.get())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_shrinks_with_the_window() {
        assert_eq!(planning_reserve_tokens(200_000, Some(32_000), 0), 20_000);
        assert_eq!(planning_reserve_tokens(1_000_000, None, 0), 20_000);
        assert_eq!(planning_reserve_tokens(64_000, Some(32_000), 0), 6_400);
        assert_eq!(planning_reserve_tokens(40_000, Some(32_000), 0), 4_096);
        assert_eq!(planning_reserve_tokens(40_000, Some(1_000), 0), 4_096);
        assert_eq!(
            planning_reserve_tokens(40_000, Some(32_000), 10_000),
            10_000
        );
        assert_eq!(usable_window(40_000, Some(32_000), 0), 35_904);
        assert_eq!(usable_window(200_000, None, 0), 180_000);
    }
}
