//! Keeping every request inside the window (DESIGN §5 "Near the limit").
//!
//! Dropping alone cannot guarantee a fit: the newest tags are protected, and one pasted log
//! can be larger than the window on its own. This module decides the rest, as pure
//! functions of the session's units and sizes:
//! - [`protected_within`]: the newest tags stay protected only while they fit a share of the
//!   room the window leaves after the system prompt, tools and head
//!   ([`PROTECTED_SHARE_PERCENT`]); counted in tags alone, twenty large tool outputs
//!   outweighed a 40K window and the session could not be sent at all;
//! - [`oversized`]: a single part larger than [`OVERSIZED_SHARE_PERCENT`] of the usable window
//!   is shown as an excerpt from its first appearance;
//! - [`plan_shrink`]: when a pressure bust or the window itself demands it, which units to
//!   show as excerpts and which tool inputs to clip, in a fixed order (protected units last,
//!   the task very last), until the prompt is back under the target;
//! - [`TokenCorrection`]: the per-model ratio between what the provider counts and our
//!   estimate, learned from every usage report, so plans are made in the provider's tokens.
//!
//! A request is refused only when even the minimal rendering (every candidate applied) does
//! not fit.

mod correction;
mod oversized;
mod protection;
mod shrink;

#[cfg(test)]
mod proptests;

pub use correction::TokenCorrection;

/// A pressure bust lands the prompt this many points of the usable window under the execute
/// threshold, not just under the force band: landing just under the band busts again on the
/// next turn, and each bust rewrites the tail.
pub const PRESSURE_MARGIN_PERCENT: u64 = 5;

/// Where a pressure bust may not reach under the execute threshold (the system prompt and
/// tools alone can be most of a small window), it aims at the floor plus this share of the
/// room above it: low enough that the next turns fit before the next bust.
pub const PRESSURE_ROOM_PERCENT: u64 = 40;

/// The prompt size a pressure bust aims for: `execute_percent` minus
/// [`PRESSURE_MARGIN_PERCENT`] of the usable window, or, when that is under the reach of the
/// `floor` (system prompt, tools and head), the floor plus [`PRESSURE_ROOM_PERCENT`] of the
/// room up to `limit`. All in the same tokens.
pub fn pressure_target(usable_window: u64, execute_percent: u8, floor: u64, limit: u64) -> u64 {
    let percent = u64::from(execute_percent).saturating_sub(PRESSURE_MARGIN_PERCENT);
    let below_execute = usable_window.saturating_mul(percent) / 100;
    let room = limit.saturating_sub(floor);
    below_execute.max(floor + room * PRESSURE_ROOM_PERCENT / 100)
}
pub use oversized::{OVERSIZED_SHARE_PERCENT, excerpt_keep_chars, oversized, oversized_keep_chars};
pub use protection::{PROTECTED_SHARE_PERCENT, protected_budget, protected_within};
pub use shrink::{
    ShrinkAction, ShrinkCandidate, ShrinkInputs, ShrinkPlan, ShrinkStage, clipped_call_tokens,
    excerpt_tokens, plan_shrink, shrink_candidates,
};
