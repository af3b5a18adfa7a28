//! `clear-tools-batched`: the same server-side edit as `clear-tools`, configured the way
//! Anthropic's documentation advises for use with prompt caching.
//!
//! Anthropic's context-editing page (platform.claude.com, "Context editing", section on
//! context editing and prompt caching) warns that clearing tool results invalidates the
//! cached prefix from the first cleared block on, and advises clearing enough tokens each
//! time to make that worth it, with `clear_at_least`: the minimum the edit must clear when it
//! activates, or it is not applied. Each clearing then costs one cache write, and the
//! requests after it read the new prefix. The same edit's `clear_tool_inputs` also clears the
//! cleared calls' arguments. So this strategy keeps the default trigger (100K input tokens)
//! and `keep` (3 tool uses) and adds `clear_at_least` ([`CLEAR_AT_LEAST_TOKENS`]) and
//! `clear_tool_inputs: true`.
//!
//! How the server picks what to clear on later requests is not documented. Recomputed from
//! the client's full history on each request, a clearing would move with every new tool use
//! as the default's does, and the cached prefix would never be reused as promised. So this
//! models the documented outcome, the reading most favourable to the edit: what was cleared
//! stays cleared (byte for byte the same placeholder), and past the trigger a new batch, every
//! whole tool use older than the newest 3, is cleared only when it frees at least
//! `clear_at_least` tokens. Between batches the prefix holds. The trigger is measured on the
//! client's full request, as for `clear-tools`; below a 100K window neither ever acts.
//!
//! The form of a cleared input is not published either; an empty object is assumed.

use std::borrow::Cow;
use std::collections::HashSet;

use mc_core::{Message, Part};
use serde_json::{Map, Value};

use super::clear_tools::{
    CLEAR_KEEP_TOOL_USES, CLEAR_PLACEHOLDER, CLEAR_TRIGGER_TOKENS, results_left_whole,
};
use super::count::{message_tokens, request_tokens};
use super::{Prepared, PreparedCall, StepView, Strategy, StrategyContext};

/// `clear_at_least`, in input tokens. A batch's bust rewrites the prompt after the first
/// cleared block once, at the write price (1.25x instead of the 0.1x read, so about 1.15x its
/// tokens more); clearing C tokens saves their 0.1x read on every later request. For a session
/// that grows by r tokens per request and keeps k tokens after the cut, the cost per request
/// is lowest near C = √(23·r·k): 10–20K for the 1–2K tokens per step and 5–10K kept of the
/// recorded coding sessions, so the upper end is taken.
pub const CLEAR_AT_LEAST_TOKENS: u64 = 20_000;

/// `messages` with the results of the tool uses in `cleared` replaced by
/// [`CLEAR_PLACEHOLDER`] and their calls' inputs by an empty object.
fn with_cleared(messages: &[Message], cleared: &HashSet<String>) -> Vec<Message> {
    messages
        .iter()
        .map(|message| {
            let mut edited = message.clone();
            for part in &mut edited.parts {
                match part {
                    Part::ToolResult {
                        call_id, content, ..
                    } if cleared.contains(call_id.as_str()) => {
                        *content = vec![Part::text(CLEAR_PLACEHOLDER)];
                    }
                    Part::ToolCall { id, input, .. } if cleared.contains(id.as_str()) => {
                        *input = Value::Object(Map::new());
                    }
                    _ => {}
                }
            }
            edited
        })
        .collect()
}

/// The `clear-tools-batched` strategy: the tool uses it has cleared, and those the last
/// request carried whole (to tell a rewrite of sent history from a clearing on arrival).
#[derive(Debug, Clone, Default)]
pub struct ClearToolsBatched {
    cleared: HashSet<String>,
    sent_whole: HashSet<String>,
}

impl ClearToolsBatched {
    /// A session that has cleared nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The next batch: every whole tool result older than the newest [`CLEAR_KEEP_TOOL_USES`],
    /// if clearing them (and their inputs) frees at least [`CLEAR_AT_LEAST_TOKENS`].
    fn next_batch(&self, messages: &[Message], ctx: &StrategyContext<'_>) -> Vec<String> {
        let results: Vec<&str> = messages.iter().flat_map(Message::tool_result_ids).collect();
        let older = results.len().saturating_sub(CLEAR_KEEP_TOOL_USES);
        let batch: Vec<String> = results[..older]
            .iter()
            .filter(|id| !self.cleared.contains(**id))
            .map(|id| (*id).to_owned())
            .collect();
        if batch.is_empty() {
            return batch;
        }
        let tokens = |messages: &[Message]| -> u64 {
            messages
                .iter()
                .map(|message| message_tokens(ctx.counter, ctx.wire, message))
                .sum()
        };
        let mut after = self.cleared.clone();
        after.extend(batch.iter().cloned());
        let freed = tokens(&with_cleared(messages, &self.cleared))
            .saturating_sub(tokens(&with_cleared(messages, &after)));
        if freed >= CLEAR_AT_LEAST_TOKENS {
            batch
        } else {
            Vec::new()
        }
    }
}

impl Strategy for ClearToolsBatched {
    fn name(&self) -> &'static str {
        "clear-tools-batched"
    }

    fn prepare<'a>(&mut self, step: &StepView<'a>, ctx: &StrategyContext<'_>) -> Prepared<'a> {
        let input = request_tokens(
            ctx.counter,
            ctx.wire,
            step.system,
            step.tools,
            step.messages,
        );
        let batch = if input > CLEAR_TRIGGER_TOKENS {
            self.next_batch(step.messages, ctx)
        } else {
            Vec::new()
        };
        let rewrote = batch.iter().any(|id| self.sent_whole.contains(id));
        self.cleared.extend(batch);
        let messages = if self.cleared.is_empty() {
            Cow::Borrowed(step.messages)
        } else {
            Cow::Owned(with_cleared(step.messages, &self.cleared))
        };
        self.sent_whole = results_left_whole(step.messages, |id| self.cleared.contains(id));
        Prepared {
            calls: vec![PreparedCall::client(step, messages)],
            bust_cause: rewrote.then_some("clear-tools-batched"),
            refused: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::strategy::test_support::{assistant_calls, context, tool_results_sized, user, view};

    /// A session of `uses` tool uses whose results are `bytes` long (one token per byte).
    fn session(uses: usize, bytes: usize) -> Vec<Message> {
        let mut messages = vec![user("go")];
        for index in 0..uses {
            let id = format!("c{index}");
            messages.push(assistant_calls(&[&id]));
            messages.push(tool_results_sized(&[&id], bytes));
        }
        messages
    }

    /// The ids whose results are cleared, and whether every cleared call lost its input.
    fn cleared(messages: &[Message]) -> (Vec<String>, bool) {
        let parts = messages.iter().flat_map(|message| message.parts.iter());
        let mut ids = Vec::new();
        let mut inputs_cleared = true;
        for part in parts {
            if let Part::ToolResult {
                call_id, content, ..
            } = part
                && content == &vec![Part::text(CLEAR_PLACEHOLDER)]
            {
                ids.push(call_id.clone());
            }
        }
        for part in messages.iter().flat_map(|message| message.parts.iter()) {
            if let Part::ToolCall { id, input, .. } = part {
                let is_cleared = ids.contains(id);
                inputs_cleared &= (input == &json!({})) == is_cleared;
            }
        }
        (ids, inputs_cleared)
    }

    fn grown(messages: &[Message], from: usize, to: usize, bytes: usize) -> Vec<Message> {
        let mut longer = messages.to_vec();
        for index in from..to {
            let id = format!("c{index}");
            longer.push(assistant_calls(&[&id]));
            longer.push(tool_results_sized(&[&id], bytes));
        }
        longer
    }

    #[test]
    fn clears_in_batches_and_keeps_the_cut_between_them() {
        let ctx = context(1_000_000);
        let mut strategy = ClearToolsBatched::new();
        // 11 uses of 10K: over the 100K trigger; the 8 older than the newest 3 are cleared.
        let first = session(11, 10_000);
        let prepared = strategy.prepare(&view(&first, None), &ctx);
        let (ids, inputs) = cleared(&prepared.calls[0].messages);
        assert_eq!(ids, (0..8).map(|i| format!("c{i}")).collect::<Vec<_>>());
        assert!(
            inputs,
            "cleared calls lose their inputs, kept ones keep them"
        );
        assert_eq!(prepared.bust_cause, None, "nothing had been sent whole");

        // One more use: c8 falls out of the kept 3, but 10K is under clear_at_least, so the
        // request is the previous one plus what was appended: the cached prefix holds.
        let second = grown(&first, 11, 12, 10_000);
        let prepared = strategy.prepare(&view(&second, None), &ctx);
        assert_eq!(cleared(&prepared.calls[0].messages).0.len(), 8);
        assert_eq!(prepared.bust_cause, None);

        // Two more: c8, c9 and c10 (30K) are past the kept 3 and whole: a new batch, which
        // rewrites results the provider has seen.
        let third = grown(&second, 12, 14, 10_000);
        let prepared = strategy.prepare(&view(&third, None), &ctx);
        let (ids, inputs) = cleared(&prepared.calls[0].messages);
        assert_eq!(ids, (0..11).map(|i| format!("c{i}")).collect::<Vec<_>>());
        assert!(inputs);
        assert_eq!(prepared.bust_cause, Some("clear-tools-batched"));
    }

    #[test]
    fn clears_nothing_under_the_trigger_or_the_minimum() {
        let ctx = context(1_000_000);
        let under_trigger = session(8, 10_000);
        let prepared = ClearToolsBatched::new().prepare(&view(&under_trigger, None), &ctx);
        assert_eq!(
            prepared.calls[0].messages.as_ref(),
            under_trigger.as_slice()
        );
        // Over the trigger, yet the results older than the kept 3 hold under 20K.
        let mut big_recent = session(2, 5_000);
        big_recent = grown(&big_recent, 2, 5, 40_000);
        let prepared = ClearToolsBatched::new().prepare(&view(&big_recent, None), &ctx);
        assert_eq!(prepared.calls[0].messages.as_ref(), big_recent.as_slice());
    }
}
