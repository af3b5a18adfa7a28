//! Where the engine puts Anthropic's `cache_control` breakpoints (DESIGN §5 "Cache
//! breakpoints").
//!
//! The provider accepts at most [`MAX_BREAKPOINTS`] markers, and from each it looks back at
//! most [`LOOKBACK_BLOCKS`] blocks for a prefix cached by an earlier request; a cache entry
//! only ever exists where some request put a marker. The engine owns placement: the plan lists
//! every block that carries a marker and every other block carries none, so client markers
//! inside the rewritten region (or anywhere else) are removed by whoever applies the plan.
//!
//! # Placement
//! Candidates, in prefix order: end of system (cached across hard folds that keep the system
//! prompt), end of `m[0]` (message 0, cached across soft busts), end of `m[1]` (message 1,
//! cached until the next soft bust), and the last block of the conversation (the steady-state
//! hit of the next request, reached through its lookback: a turn adds a few blocks, well within
//! the 20-block reach of the previous request's last marker). Four slots at most, taken in this
//! priority: last block, end of `m[1]`, end of `m[0]`, end of system, then a mid-tail marker
//! exactly [`LOOKBACK_BLOCKS`] blocks before the last one when the tail after the head is
//! longer than that. A session with a system prompt therefore gets system + `m[0]` + `m[1]` +
//! last: a soft bust (new `m[1]`) rewrites only `m[1]` and the tail, never `m[0]`, which is the
//! large part of the head. With no system prompt the spare slot becomes the mid-tail marker,
//! which still finds the previous request's entry when one request adds more than 20 blocks.
//! Coinciding slots (no tail, empty messages) merge.
//!
//! Blocks listed in [`PromptLayout::unmarkable`] (thinking blocks, which the provider refuses
//! to mark) are never chosen: an end-of-message or last-block slot moves back to the nearest
//! markable block of the same message, a mid-tail slot to the nearest markable block after it.
//!
//! # TTL
//! Providers require longer TTLs before shorter ones. If the client asked for `"1h"` anywhere,
//! every engine marker uses `"1h"` (keeping the client's choice, and trivially ordered);
//! otherwise every marker uses the default 5 minutes.
//!
//! ```
//! use mc_core::breakpoints::{BlockSlot, CacheTtlChoice, PromptLayout, Ttl, plan_breakpoints};
//!
//! // System of 2 blocks, m[0], m[1], then a 30-block tail of one-block messages.
//! let layout = PromptLayout::new(2, [vec![1, 1], vec![1; 30]].concat());
//! let plan = plan_breakpoints(&layout, CacheTtlChoice::Default);
//! assert!(plan.system);
//! let slots: Vec<BlockSlot> = plan.slots.iter().map(|&(slot, _)| slot).collect();
//! assert_eq!(slots, [BlockSlot::new(0, 0), BlockSlot::new(1, 0), BlockSlot::new(31, 0)]);
//! assert!(plan.slots.iter().all(|&(_, ttl)| ttl == Ttl::FiveMinutes));
//! ```

mod plan;

pub use plan::{
    BlockSlot, BreakpointPlan, CacheTtlChoice, LOOKBACK_BLOCKS, MAX_BREAKPOINTS, PromptLayout, Ttl,
    plan_breakpoints,
};

#[cfg(test)]
mod tests;
