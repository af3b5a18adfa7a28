//! `window`: keep the newest messages that fit under a budget.
//!
//! The budget is the window minus the output reserve (`min(max output, 20K)`, the reserve
//! Claude Code keeps, DESIGN §9 "usage"), minus the system prompt and tools. The head system
//! messages always stay; the rest is cut only where [`valid_starts`] allows, so a tool call
//! never loses its result and the kept part never opens with an orphan result. A kept part
//! that opens with an assistant turn gets [`OMITTED_MARKER`] as a user turn before it, since
//! providers want a conversation to open with the user (its tokens count in the budget). Each
//! time the
//! cut moves, the prefix after the system prompt changes and the cache busts from there: the
//! cost this baseline pays for never overflowing.

use std::borrow::Cow;

pub use mc_core::pass_plan::output_reserve_tokens;
use mc_core::{Message, Part, Role};

use super::count::{fixed_tokens, message_tokens};
use super::pairs::{head_len, valid_starts};
use super::{Prepared, PreparedCall, StepView, Strategy, StrategyContext};

/// The user turn put before a kept part that opens with an assistant turn.
pub const OMITTED_MARKER: &str = "[Earlier messages were dropped to fit the context window.]";

/// Where the kept conversation starts (after the head system messages).
///
/// `tokens[i]` is message `i`'s estimate; `budget_tokens` is what the head and the kept
/// messages may take together, with `marker_tokens` more when the kept part opens with an
/// assistant turn. The earliest valid start whose total fits wins; when none fits, the latest
/// valid start (the least that can be sent); when there is no valid start, nothing is dropped.
pub fn window_start(
    messages: &[Message],
    tokens: &[u64],
    budget_tokens: u64,
    marker_tokens: u64,
) -> usize {
    let head = head_len(messages);
    let valid = valid_starts(messages);
    let head_tokens: u64 = tokens.iter().take(head).sum();
    let mut suffix_tokens: u64 = tokens.iter().skip(head).sum();
    let mut latest_valid = None;
    let mut first_fitting = None;
    for index in head..messages.len() {
        if valid[index] {
            latest_valid = Some(index);
            let marker = if messages[index].role == Role::Assistant {
                marker_tokens
            } else {
                0
            };
            let total = head_tokens
                .saturating_add(suffix_tokens)
                .saturating_add(marker);
            if first_fitting.is_none() && total <= budget_tokens {
                first_fitting = Some(index);
            }
        }
        suffix_tokens = suffix_tokens.saturating_sub(tokens.get(index).copied().unwrap_or(0));
    }
    first_fitting.or(latest_valid).unwrap_or(head)
}

/// The user turn [`OMITTED_MARKER`].
pub fn omitted_marker() -> Message {
    Message::new(Role::User, vec![Part::text(OMITTED_MARKER)])
}

/// The `window` strategy; remembers where it cut last time, to name the bust it causes.
#[derive(Debug, Clone, Default)]
pub struct Window {
    last_start: Option<usize>,
}

impl Window {
    /// A window that has cut nothing yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Strategy for Window {
    fn name(&self) -> &'static str {
        "window"
    }

    fn prepare<'a>(&mut self, step: &StepView<'a>, ctx: &StrategyContext<'_>) -> Prepared<'a> {
        let budget = ctx
            .window_tokens
            .saturating_sub(output_reserve_tokens(ctx.max_output_tokens))
            .saturating_sub(fixed_tokens(ctx.counter, ctx.wire, step.system, step.tools));
        let tokens: Vec<u64> = step
            .messages
            .iter()
            .map(|message| message_tokens(ctx.counter, ctx.wire, message))
            .collect();
        let head = head_len(step.messages);
        let marker = omitted_marker();
        let marker_tokens = message_tokens(ctx.counter, ctx.wire, &marker);
        let start = window_start(step.messages, &tokens, budget, marker_tokens);
        // A cut that moved since the last request rewrote what the provider has cached.
        let moved = start > head && self.last_start.is_some_and(|last| last != start);
        self.last_start = Some(start);
        let messages = if start == head {
            Cow::Borrowed(step.messages)
        } else {
            let mut kept = step.messages[..head].to_vec();
            if step.messages[start].role == Role::Assistant {
                kept.push(marker);
            }
            kept.extend_from_slice(&step.messages[start..]);
            Cow::Owned(kept)
        };
        Prepared {
            calls: vec![PreparedCall::client(step, messages)],
            bust_cause: moved.then_some("window"),
            refused: false,
        }
    }
}

#[cfg(test)]
mod tests;
