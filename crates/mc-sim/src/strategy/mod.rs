//! Context-management strategies: what sits between the client and the provider.
//!
//! Each strategy turns the conversation a client sent into the upstream calls a provider
//! would price for it. They are the baselines every Magic Context figure is compared with
//! (DESIGN §8):
//! - [`Passthrough`]: sends the client's request as it is;
//! - [`Autocompact`]: Claude Code's own compaction (one summary call near the window, then a
//!   summary in place of the history);
//! - [`Window`]: keeps the newest messages that fit under a budget;
//! - [`ClearTools`]: Anthropic's server-side `clear_tool_uses_20250919` edit, as configured by
//!   default;
//! - [`ClearToolsBatched`]: the same edit configured for prompt caching (`clear_at_least`,
//!   `clear_tool_inputs`).
//!
//! A strategy is a pure, deterministic transform: the step, the previous answer's usage and
//! the model's limits come in as arguments, and it reads no clock. Token estimates come from a
//! [`CountTokens`] passed in, so tests can use exact fake counts. Every strategy renders its
//! calls with the same function ([`render_anthropic`] or [`render_openai`]), so differences
//! between strategies come from what they send, never from how it is marked for the cache.
//!
//! ```
//! use std::sync::Arc;
//! use mc_core::{Message, Part, Role};
//! use mc_sim::{CountTokens, Wire};
//! use mc_sim::strategy::{StepView, StrategyContext, StrategyKind};
//!
//! struct Chars;
//! impl CountTokens for Chars {
//!     fn count_tokens(&self, text: &str) -> u64 { text.len() as u64 }
//! }
//!
//! let kind: StrategyKind = "window".parse()?;
//! let mut strategy = kind.build().expect("a baseline");
//! let messages = vec![Message::new(Role::User, vec![Part::text("fix the test")])];
//! let step = StepView { at_ms: 0, system: &[], tools: &[], messages: &messages, last_prompt_tokens: None };
//! let ctx = StrategyContext { model: "claude-sonnet-4-5", wire: Wire::Anthropic,
//!     window_tokens: 50_000, max_output_tokens: 64_000, counter: &Chars };
//! let prepared = strategy.prepare(&step, &ctx);
//! assert_eq!(prepared.calls.len(), 1);
//! assert_eq!(prepared.main().map(|call| call.messages.len()), Some(1));
//! # Ok::<(), mc_sim::strategy::UnknownStrategy>(())
//! ```

mod autocompact;
mod clear_tools;
mod clear_tools_batched;
mod count;
mod kind;
mod pairs;
mod passthrough;
mod render;
mod summary;
mod window;

use std::borrow::Cow;
use std::collections::BTreeMap;

use mc_core::Message;

use crate::Wire;
use crate::recording::ToolSpec;
use crate::tokens::CountTokens;

pub use autocompact::{Autocompact, SUMMARY_LABEL};
pub use clear_tools::{
    CLEAR_KEEP_TOOL_USES, CLEAR_PLACEHOLDER, CLEAR_TRIGGER_TOKENS, ClearTools, clear_tool_results,
};
pub use clear_tools_batched::{CLEAR_AT_LEAST_TOKENS, ClearToolsBatched};
pub use count::{fixed_tokens, message_tokens};
pub use kind::{StrategyKind, UnknownStrategy};
pub use mc_core::host_compaction::{
    SUMMARY_OUTPUT_TOKENS, autocompact_threshold_tokens, is_degenerate_trigger,
};
pub use pairs::valid_starts;
pub use passthrough::Passthrough;
pub use render::{render_anthropic, render_anthropic_marked, render_openai};
pub use window::{OMITTED_MARKER, Window, omitted_marker, output_reserve_tokens, window_start};

/// One request of a recording, as a strategy sees it.
#[derive(Debug, Clone, Copy)]
pub struct StepView<'a> {
    /// Simulated time of the request, in ms since the recording's first request.
    pub at_ms: u64,
    /// The system prompt, one entry per block.
    pub system: &'a [String],
    /// The tools the client offered.
    pub tools: &'a [ToolSpec],
    /// The conversation the client sent (full, unmanaged).
    pub messages: &'a [Message],
    /// The prompt tokens the provider reported (or refused, on overflow) for this strategy's
    /// previous main request; `None` on the first step.
    pub last_prompt_tokens: Option<u64>,
}

/// The model's limits and the token counter, fixed for a replay.
#[derive(Clone, Copy)]
pub struct StrategyContext<'a> {
    /// The model the calls go to.
    pub model: &'a str,
    /// Which wire format the calls are rendered in (decides how tokens are estimated).
    pub wire: Wire,
    /// The context window in tokens.
    pub window_tokens: u64,
    /// The model's maximum output tokens.
    pub max_output_tokens: u64,
    /// Estimates token counts for the strategy's rules.
    pub counter: &'a dyn CountTokens,
}

impl std::fmt::Debug for StrategyContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StrategyContext")
            .field("model", &self.model)
            .field("wire", &self.wire)
            .field("window_tokens", &self.window_tokens)
            .field("max_output_tokens", &self.max_output_tokens)
            .finish_non_exhaustive()
    }
}

/// One upstream call to price.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedCall<'a> {
    /// The system prompt of this call.
    pub system: &'a [String],
    /// The tools of this call.
    pub tools: &'a [ToolSpec],
    /// The conversation this call sends; borrowed when the strategy changed nothing.
    pub messages: Cow<'a, [Message]>,
    /// The model this call goes to; `None` is the replay's model. A background call (a
    /// summariser) may run on a smaller model, and must then be priced at that model's prices
    /// and cache rules, not the main model's.
    pub model: Option<&'a str>,
    /// What the call is for, when it is not the client's own request (`"summary"`); reports
    /// total labelled calls apart, so what the background work costs can be read off.
    pub label: Option<&'static str>,
    /// The output the call generates, when the strategy knows it (a summary's size); `None`
    /// means the step's recorded output.
    pub output_tokens: Option<u64>,
    /// Where this call's `cache_control` markers go, when the strategy places them itself
    /// (the engine does); `None` renders Claude Code's own placement.
    pub cache_marks: Option<CacheMarks>,
}

impl<'a> PreparedCall<'a> {
    /// The client's own call of `step` sending `messages`: the replay's model, no label, the
    /// recorded output, Claude Code's own marker placement.
    pub fn client(step: &StepView<'a>, messages: Cow<'a, [Message]>) -> Self {
        Self {
            system: step.system,
            tools: step.tools,
            messages,
            model: None,
            label: None,
            output_tokens: None,
            cache_marks: None,
        }
    }
}

/// Explicit breakpoint placement: on the last system block, and on blocks named by
/// (message index, block index) of the rendered conversation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CacheMarks {
    /// Mark the last system block.
    pub system: bool,
    /// Marked blocks as (message, block) positions.
    pub slots: Vec<(usize, usize)>,
    /// Use the 1-hour TTL instead of 5 minutes.
    pub one_hour: bool,
}

/// The calls a strategy makes for one step: extra calls first, the client's request last.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared<'a> {
    /// The calls, in the order they are sent (all at the step's time).
    pub calls: Vec<PreparedCall<'a>>,
    /// Why the strategy rewrote history it had already sent this step, if it did; a cache
    /// bust in this step is blamed on it.
    pub bust_cause: Option<&'static str>,
    /// The strategy refused the client's request (it cannot fit, and nothing is sent), as the
    /// proxy answers a request whose minimal rendering is over the window: the client's
    /// session fails here.
    pub refused: bool,
}

impl<'a> Prepared<'a> {
    /// One call, the client's request, with no rewrite.
    pub fn single(call: PreparedCall<'a>) -> Self {
        Self {
            calls: vec![call],
            bust_cause: None,
            refused: false,
        }
    }

    /// Nothing is sent: the strategy refused the request.
    pub fn refused() -> Self {
        Self {
            calls: Vec::new(),
            bust_cause: None,
            refused: true,
        }
    }

    /// The client's request (the last call).
    pub fn main(&self) -> Option<&PreparedCall<'a>> {
        self.calls.last()
    }
}

/// A context-management strategy.
///
/// One value serves one recording: it may keep state between steps (a summary, what it
/// cleared last time), so the harness builds a fresh one per recording.
pub trait Strategy: Send {
    /// The strategy's name, as [`StrategyKind`] prints it.
    fn name(&self) -> &'static str;

    /// The calls to price for `step`.
    fn prepare<'a>(&mut self, step: &StepView<'a>, ctx: &StrategyContext<'_>) -> Prepared<'a>;

    /// Counts only the strategy knows (compartments it produced, say), read once the
    /// recording is replayed; reports sum them over recordings. The calls alone cannot tell
    /// what a strategy did with them, and the baselines have nothing to add, hence empty.
    fn counters(&self) -> BTreeMap<&'static str, u64> {
        BTreeMap::new()
    }
}

#[cfg(test)]
mod test_support;
