//! `clear-tools`: Anthropic's server-side `clear_tool_uses_20250919` context edit.
//!
//! With the edit's defaults: when the request's input exceeds 100K tokens, the content of
//! every tool result but those of the 3 most recent tool uses is replaced by a short
//! placeholder (calls and their inputs stay). The server applies it to each request as it
//! arrives, recomputed from the client's full history, so every new tool use pushes one more
//! result out of the kept 3: the first changed block moves forward and the cache busts from
//! there on each such request. Modelled the same way on OpenAI-wire models, where no such
//! feature exists, so the baseline can still be compared.
//!
//! The placeholder's exact wording is not published; any short text gives the same cost.

use std::borrow::Cow;
use std::collections::HashSet;

use mc_core::{Message, Part};

use super::count::request_tokens;
use super::{Prepared, PreparedCall, StepView, Strategy, StrategyContext};

/// The edit's default trigger: input tokens above which it clears.
pub const CLEAR_TRIGGER_TOKENS: u64 = 100_000;

/// The edit's default `keep`: the most recent tool uses whose results stay.
pub const CLEAR_KEEP_TOOL_USES: usize = 3;

/// What a cleared result says instead of its content.
pub const CLEAR_PLACEHOLDER: &str = "[tool result cleared to save context]";

/// `messages` with the content of every tool result but the newest `keep` replaced by
/// [`CLEAR_PLACEHOLDER`], and the call ids of the results cleared, in order.
pub fn clear_tool_results(messages: &[Message], keep: usize) -> (Vec<Message>, Vec<String>) {
    let results = messages
        .iter()
        .flat_map(|message| message.parts.iter())
        .filter(|part| part.is_tool_result())
        .count();
    let mut to_clear = results.saturating_sub(keep);
    let mut cleared = Vec::with_capacity(to_clear);
    let mut out = Vec::with_capacity(messages.len());
    for message in messages {
        if to_clear == 0 {
            out.push(message.clone());
            continue;
        }
        let mut edited = message.clone();
        for part in &mut edited.parts {
            if to_clear == 0 {
                break;
            }
            if let Part::ToolResult {
                call_id, content, ..
            } = part
            {
                *content = vec![Part::text(CLEAR_PLACEHOLDER)];
                cleared.push(call_id.clone());
                to_clear -= 1;
            }
        }
        out.push(edited);
    }
    (out, cleared)
}

/// The `clear-tools` strategy; remembers which results the last request carried whole, to
/// tell a rewrite of sent history from clearing a result on arrival.
#[derive(Debug, Clone, Default)]
pub struct ClearTools {
    sent_whole: HashSet<String>,
}

impl ClearTools {
    /// A session that has cleared nothing yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Strategy for ClearTools {
    fn name(&self) -> &'static str {
        "clear-tools"
    }

    fn prepare<'a>(&mut self, step: &StepView<'a>, ctx: &StrategyContext<'_>) -> Prepared<'a> {
        let input = request_tokens(
            ctx.counter,
            ctx.wire,
            step.system,
            step.tools,
            step.messages,
        );
        let (messages, cleared) = if input > CLEAR_TRIGGER_TOKENS {
            let (edited, cleared) = clear_tool_results(step.messages, CLEAR_KEEP_TOOL_USES);
            (Cow::Owned(edited), cleared)
        } else {
            (Cow::Borrowed(step.messages), Vec::new())
        };
        let rewrote = cleared.iter().any(|id| self.sent_whole.contains(id));
        let cleared: HashSet<&str> = cleared.iter().map(String::as_str).collect();
        self.sent_whole = results_left_whole(step.messages, |id| cleared.contains(id));
        Prepared {
            calls: vec![PreparedCall::client(step, messages)],
            bust_cause: rewrote.then_some("clear-tools"),
            refused: false,
        }
    }
}

/// The ids of the tool results `messages` still shows whole: every result but the cleared
/// ones. Clearing one of them later rewrites a prefix the provider has cached.
pub(super) fn results_left_whole(
    messages: &[Message],
    is_cleared: impl Fn(&str) -> bool,
) -> HashSet<String> {
    messages
        .iter()
        .flat_map(Message::tool_result_ids)
        .filter(|id| !is_cleared(id))
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::test_support::{assistant_calls, context, tool_results_sized, user, view};

    fn session(results: usize, bytes: usize) -> Vec<Message> {
        let mut messages = vec![user("go")];
        for index in 0..results {
            let id = format!("c{index}");
            messages.push(assistant_calls(&[&id]));
            messages.push(tool_results_sized(&[&id], bytes));
        }
        messages
    }

    fn whole_results(messages: &[Message]) -> Vec<String> {
        messages
            .iter()
            .flat_map(|message| message.parts.iter())
            .filter_map(|part| match part {
                Part::ToolResult {
                    call_id, content, ..
                } if content != &vec![Part::text(CLEAR_PLACEHOLDER)] => Some(call_id.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn clearing_keeps_the_three_newest_results_and_every_call() {
        let messages = session(6, 10);
        let (edited, cleared) = clear_tool_results(&messages, 3);
        assert_eq!(cleared, ["c0", "c1", "c2"]);
        assert_eq!(whole_results(&edited), ["c3", "c4", "c5"]);
        let calls = |list: &[Message]| -> Vec<String> {
            list.iter()
                .flat_map(Message::tool_call_ids)
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(calls(&edited), calls(&messages));
        assert_eq!(
            clear_tool_results(&messages[..5], 3).1,
            Vec::<String>::new()
        );
    }

    #[test]
    fn nothing_is_cleared_at_or_under_the_trigger() {
        let messages = session(8, 10_000);
        let prepared = ClearTools::new().prepare(&view(&messages, None), &context(200_000));
        assert_eq!(prepared.calls[0].messages.as_ref(), messages.as_slice());
        assert_eq!(prepared.bust_cause, None);
    }

    #[test]
    fn past_the_trigger_each_new_use_clears_one_more_sent_result() {
        let ctx = context(1_000_000);
        let mut strategy = ClearTools::new();
        let messages = session(12, 10_000);
        let first = strategy.prepare(&view(&messages, None), &ctx);
        assert_eq!(
            whole_results(&first.calls[0].messages),
            ["c9", "c10", "c11"]
        );
        assert_eq!(first.bust_cause, None, "nothing had been sent before");

        let mut longer = messages.clone();
        longer.push(assistant_calls(&["c12"]));
        longer.push(tool_results_sized(&["c12"], 10_000));
        let second = strategy.prepare(&view(&longer, None), &ctx);
        assert_eq!(
            whole_results(&second.calls[0].messages),
            ["c10", "c11", "c12"]
        );
        assert_eq!(
            second.bust_cause,
            Some("clear-tools"),
            "c9 was sent whole before"
        );

        let third = strategy.prepare(&view(&longer, None), &ctx);
        assert_eq!(
            third.bust_cause, None,
            "the same request clears nothing new"
        );
    }
}
