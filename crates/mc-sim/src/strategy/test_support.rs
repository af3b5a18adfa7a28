//! Small conversations and a byte counter for the strategies' tests.

use mc_core::{Message, Part, Role};
use serde_json::json;

use super::{StepView, StrategyContext};
use crate::Wire;
use crate::tokens::CountTokens;

/// One token per byte, so sizes follow the canonical JSON exactly.
pub struct Chars;

impl CountTokens for Chars {
    fn count_tokens(&self, text: &str) -> u64 {
        text.len() as u64
    }
}

pub fn system(text: &str) -> Message {
    Message::new(Role::System, vec![Part::text(text)])
}

pub fn user(text: &str) -> Message {
    Message::new(Role::User, vec![Part::text(text)])
}

pub fn assistant(text: &str) -> Message {
    Message::new(Role::Assistant, vec![Part::text(text)])
}

pub fn assistant_calls(ids: &[&str]) -> Message {
    Message::new(
        Role::Assistant,
        ids.iter()
            .map(|id| Part::ToolCall {
                id: (*id).to_owned(),
                name: "Bash".into(),
                input: json!({"command": "ls"}),
            })
            .collect(),
    )
}

pub fn tool_results(ids: &[&str]) -> Message {
    tool_results_sized(ids, 8)
}

pub fn tool_results_sized(ids: &[&str], bytes: usize) -> Message {
    Message::new(
        Role::User,
        ids.iter()
            .map(|id| Part::ToolResult {
                call_id: (*id).to_owned(),
                content: vec![Part::text("x".repeat(bytes))],
                is_error: false,
            })
            .collect(),
    )
}

/// `turns` user/assistant text exchanges, ending with a user message.
pub fn conversation(turns: usize) -> Vec<Message> {
    let mut messages = Vec::new();
    for turn in 0..turns {
        if turn > 0 {
            messages.push(assistant(&format!("answer {turn}")));
        }
        messages.push(user(&format!("question {turn}")));
    }
    messages
}

pub fn view(messages: &[Message], last_prompt_tokens: Option<u64>) -> StepView<'_> {
    StepView {
        at_ms: 0,
        system: &[],
        tools: &[],
        messages,
        last_prompt_tokens,
    }
}

/// Anthropic wire, Sonnet-class output (reserve 20K), `window_tokens` window, byte counts.
pub fn context(window_tokens: u64) -> StrategyContext<'static> {
    StrategyContext {
        model: "claude-sonnet-4-5",
        wire: Wire::Anthropic,
        window_tokens,
        max_output_tokens: 64_000,
        counter: &Chars,
    }
}
