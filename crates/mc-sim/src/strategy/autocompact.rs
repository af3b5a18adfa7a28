//! `autocompact`: Claude Code's own compaction, message by message, with the rule, the
//! summary's size and the instruction of [`mc_core::host_compaction`] (which the dashboard's
//! estimate over a session's ledger uses too).
//!
//! The summary call here keeps the main request's system prompt and tools and appends the
//! instruction, so it reads the conversation's cached prefix: the cheapest way to compact,
//! which keeps this baseline honest (Claude Code 1.0.6's recorded call used its own short
//! system prompt and one tool, so it read nothing from the cache). Its output is
//! [`SUMMARY_OUTPUT_TOKENS`], the size of the real summary in the shared capture.

use std::borrow::Cow;

use mc_core::host_compaction::{
    SUMMARY_INSTRUCTION, SUMMARY_OUTPUT_TOKENS, autocompact_threshold_tokens,
};
use mc_core::{Message, Part, Role};

use super::count::{fixed_tokens, message_tokens};
use super::pairs::head_len;
use super::summary::summary_message;
use super::{Prepared, PreparedCall, StepView, Strategy, StrategyContext};

/// The label of the summary call in ledgers and reports.
pub const SUMMARY_LABEL: &str = "summary";

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
