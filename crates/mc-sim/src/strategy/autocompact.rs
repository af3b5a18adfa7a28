//! `autocompact`: Claude Code's own compaction.
//!
//! Claude Code compacts when its estimate of the next prompt (the last response's prompt
//! tokens plus the messages added since) reaches `window − min(max output, 20K) − 13K`. It
//! then makes one summary call over the whole context, and from then on sends the summary as
//! a user turn followed by whatever arrives after the compaction point; it compacts again
//! when that grows back to the threshold.
//!
//! The summary call here keeps the main request's system prompt and tools and appends the
//! instruction, so it reads the conversation's cached prefix: the cheapest way to compact,
//! which keeps this baseline honest (Claude Code 1.0.6's recorded call used its own short
//! system prompt and one tool, so it read nothing from the cache). Its output is
//! [`SUMMARY_OUTPUT_TOKENS`], the size of the real summary in the shared capture.

use std::borrow::Cow;

use mc_core::{Message, Part, Role};

use super::count::{fixed_tokens, message_tokens};
use super::pairs::head_len;
use super::summary::{SUMMARY_INSTRUCTION, summary_message};
use super::window::output_reserve_tokens;
use super::{Prepared, PreparedCall, StepView, Strategy, StrategyContext};

/// Output tokens of a compaction summary: the recorded compaction call of
/// `shared/data/anthropic-capture/claude-code-traffic.jsonl` (line 35, Claude Code 1.0.6 on
/// claude-sonnet-4) reported `output_tokens: 1206` for a 4,878-character summary of a
/// 12K-token session.
pub const SUMMARY_OUTPUT_TOKENS: u64 = 1_206;

/// The label of the summary call in ledgers and reports.
pub const SUMMARY_LABEL: &str = "summary";

/// The margin Claude Code keeps below the usable window before it compacts.
const AUTOCOMPACT_BUFFER_TOKENS: u64 = 13_000;

/// The prompt size at which Claude Code compacts: `window − min(max output, 20K) − 13K`.
pub fn autocompact_threshold_tokens(window_tokens: u64, max_output_tokens: u64) -> u64 {
    window_tokens
        .saturating_sub(output_reserve_tokens(max_output_tokens))
        .saturating_sub(AUTOCOMPACT_BUFFER_TOKENS)
}

/// Whether the trigger at this window is degenerate: under half the window.
///
/// Claude Code's trigger keeps a fixed 33K (20K output reserve plus 13K) under the window: 83%
/// of a 200K window, but half of a 66K one and nothing at all below 33K. Under half the
/// window, this baseline compacts with most of the window still free, so it summarises far
/// more often than Claude Code does at the windows it was made for, and a ratio against it
/// flatters whatever it is compared with. Replay reports flag it (`degenerate_baseline`).
pub fn is_degenerate_trigger(window_tokens: u64, max_output_tokens: u64) -> bool {
    autocompact_threshold_tokens(window_tokens, max_output_tokens).saturating_mul(2) < window_tokens
}

/// The `autocompact` strategy and the summary it carries.
#[derive(Debug, Clone, Default)]
pub struct Autocompact {
    /// The user turn standing in for everything before `cut`.
    summary: Option<Message>,
    /// The client message index where the kept history resumes after the summary.
    cut: usize,
    /// How many messages the client sent last step, to find what is new this step.
    last_len: usize,
    /// Compactions so far, which numbers the summaries.
    compactions: u32,
}

impl Autocompact {
    /// A session that has not compacted yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The conversation as this strategy sends it: the head system messages, the summary,
    /// then the client's messages from the cut on.
    fn managed<'a>(&self, messages: &'a [Message]) -> Cow<'a, [Message]> {
        let Some(summary) = &self.summary else {
            return Cow::Borrowed(messages);
        };
        let head = head_len(messages);
        let mut managed = messages[..head].to_vec();
        managed.push(summary.clone());
        managed.extend_from_slice(&messages[self.cut.max(head)..]);
        Cow::Owned(managed)
    }
}

impl Strategy for Autocompact {
    fn name(&self) -> &'static str {
        "autocompact"
    }

    fn prepare<'a>(&mut self, step: &StepView<'a>, ctx: &StrategyContext<'_>) -> Prepared<'a> {
        let messages = step.messages;
        if messages.len() < self.cut || messages.len() < self.last_len {
            // The client rewrote its own history (it compacted itself): start over.
            *self = Self {
                compactions: self.compactions,
                ..Self::new()
            };
        }
        let count = |message: &Message| message_tokens(ctx.counter, ctx.wire, message);
        let managed = self.managed(messages);
        // Claude Code's estimate: the last prompt the provider measured plus what is new.
        let estimate = match step.last_prompt_tokens {
            Some(last) => last + messages[self.last_len..].iter().map(count).sum::<u64>(),
            None => {
                fixed_tokens(ctx.counter, ctx.wire, step.system, step.tools)
                    + managed.iter().map(count).sum::<u64>()
            }
        };
        self.last_len = messages.len();
        let threshold = autocompact_threshold_tokens(ctx.window_tokens, ctx.max_output_tokens);
        let has_new = messages.len() > self.cut.max(head_len(messages));
        if estimate < threshold || !has_new {
            return Prepared::single(PreparedCall::client(step, managed));
        }

        let head = head_len(messages);
        let mut summary_call = managed.into_owned();
        let summarised = summary_call[head..].to_vec();
        summary_call.push(Message::new(
            Role::User,
            vec![Part::text(SUMMARY_INSTRUCTION)],
        ));
        self.compactions += 1;
        self.summary = Some(summary_message(
            ctx.counter,
            &summarised,
            SUMMARY_OUTPUT_TOKENS,
            self.compactions,
        ));
        self.cut = messages.len();
        let main = self.managed(messages);
        Prepared {
            calls: vec![
                PreparedCall {
                    system: step.system,
                    tools: step.tools,
                    messages: Cow::Owned(summary_call),
                    model: None,
                    label: Some(SUMMARY_LABEL),
                    output_tokens: Some(SUMMARY_OUTPUT_TOKENS),
                    cache_marks: None,
                },
                PreparedCall {
                    system: step.system,
                    tools: step.tools,
                    messages: main,
                    model: None,
                    label: None,
                    output_tokens: None,
                    cache_marks: None,
                },
            ],
            bust_cause: Some("autocompact"),
            refused: false,
        }
    }
}

#[cfg(test)]
mod tests;
