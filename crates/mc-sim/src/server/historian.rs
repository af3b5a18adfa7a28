//! Historian calls: a request that forces the `record_history` tool is answered by the
//! simulated historian ([`crate::historian::historian_answer`]) instead of the responder, so a
//! script or a recording plays on undisturbed while the proxy's background historian runs.
//!
//! [`HistorianMode`] makes those calls fail the ways a real small model or provider does
//! (a schema-breaking answer, an overload, a call that never returns) while every other call
//! is answered as usual, so tests can show the historian's failures never reach a request.

use std::fmt;
use std::str::FromStr;

use mc_core::historian::HISTORY_TOOL;
use mc_core::{Message, Part, Role, joined_texts};
use serde_json::{Map, Value, json};

use super::error::InvalidHistorianMode;
use super::reply::Reply;
use crate::Wire;
use crate::historian::historian_answer;
use crate::script::StopReason;

/// How the simulated provider answers historian calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HistorianMode {
    /// A valid answer from the transcript, as an honest small model gives.
    #[default]
    Honest,
    /// A call whose input does not match the tool's schema, as a confused model gives.
    Garbage,
    /// The provider's overload error: Anthropic's 529 `overloaded_error`, OpenAI's 503.
    Overloaded,
    /// No answer until the server stops, as a hung model or connection gives.
    Stall,
    /// The honest answer after [`SLOW_HISTORIAN`], as a busy small model gives: every run
    /// then outlasts an agent's turn, so a test can see agent calls served while runs are in
    /// flight instead of racing a run that takes a few milliseconds.
    Slow,
}

/// How long a [`HistorianMode::Slow`] answer waits before it is sent.
pub const SLOW_HISTORIAN: std::time::Duration = std::time::Duration::from_millis(300);

impl HistorianMode {
    const ALL: [Self; 5] = [
        Self::Honest,
        Self::Garbage,
        Self::Overloaded,
        Self::Stall,
        Self::Slow,
    ];

    /// The mode's name, as `--historian` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Honest => "honest",
            Self::Garbage => "garbage",
            Self::Overloaded => "overloaded",
            Self::Stall => "stall",
            Self::Slow => "slow",
        }
    }
}

impl fmt::Display for HistorianMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for HistorianMode {
    type Err = InvalidHistorianMode;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|mode| mode.as_str() == text.trim())
            .ok_or_else(|| InvalidHistorianMode {
                given: text.to_owned(),
            })
    }
}

/// What a historian call gets.
#[derive(Debug)]
pub(crate) enum HistorianPlan {
    /// This tool call, priced like any answer.
    Reply(Reply),
    /// This tool call, sent after [`SLOW_HISTORIAN`].
    Later(Reply),
    /// The provider's overload error.
    Overloaded,
    /// Nothing until the server stops.
    Stall,
}

/// The plan for a request on `wire` with the unmodelled fields `rest`, or `None` when it does
/// not force `record_history` (the responder answers it).
pub(crate) fn plan(
    mode: HistorianMode,
    wire: Wire,
    rest: &Map<String, Value>,
    conversation: &[Message],
) -> Option<HistorianPlan> {
    if forced_tool(wire, rest) != Some(HISTORY_TOOL) {
        return None;
    }
    Some(match mode {
        HistorianMode::Honest => HistorianPlan::Reply(honest(conversation)),
        HistorianMode::Slow => HistorianPlan::Later(honest(conversation)),
        HistorianMode::Garbage => HistorianPlan::Reply(tool_call(json!({
            "summary": "The user and the assistant worked on the code.",
            "compartments": "see summary",
        }))),
        HistorianMode::Overloaded => HistorianPlan::Overloaded,
        HistorianMode::Stall => HistorianPlan::Stall,
    })
}

/// The answer an honest model gives: a transcript that cannot be read gets what a lost
/// model sends, a call with no compartments, which fails validation.
fn honest(conversation: &[Message]) -> Reply {
    let transcript = last_user_text(conversation);
    let input = historian_answer(&transcript).unwrap_or_else(|| json!({ "compartments": [] }));
    tool_call(input)
}

/// The tool a request forces: Anthropic's `tool_choice: {"type": "tool", "name"}`, OpenAI's
/// `tool_choice: {"type": "function", "function": {"name"}}`.
fn forced_tool(wire: Wire, rest: &Map<String, Value>) -> Option<&str> {
    let choice = rest.get("tool_choice")?;
    let kind = choice.get("type").and_then(Value::as_str)?;
    let name = match (wire, kind) {
        (Wire::Anthropic, "tool") => choice.get("name"),
        (Wire::OpenAi, "function") => choice.get("function")?.get("name"),
        _ => None,
    };
    name.and_then(Value::as_str)
}

/// The texts of the last user message: where the historian's transcript is.
fn last_user_text(conversation: &[Message]) -> String {
    conversation
        .iter()
        .rev()
        .find(|message| message.role == Role::User)
        .map(|message| joined_texts(&message.parts))
        .unwrap_or_default()
}

fn tool_call(input: Value) -> Reply {
    Reply {
        parts: vec![Part::ToolCall {
            id: String::new(),
            name: HISTORY_TOOL.to_owned(),
            input,
        }],
        stop_reason: StopReason::ToolUse,
        output_tokens: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rest(tool_choice: Value) -> Map<String, Value> {
        let mut rest = Map::new();
        rest.insert("tool_choice".to_owned(), tool_choice);
        rest
    }

    #[test]
    fn historian_calls_are_recognised_on_both_wires_only_when_forced() {
        let anthropic = rest(json!({"type": "tool", "name": "record_history"}));
        let openai = rest(json!({"type": "function", "function": {"name": "record_history"}}));
        assert_eq!(forced_tool(Wire::Anthropic, &anthropic), Some(HISTORY_TOOL));
        assert_eq!(forced_tool(Wire::OpenAi, &openai), Some(HISTORY_TOOL));
        assert_eq!(forced_tool(Wire::OpenAi, &anthropic), None);
        assert_eq!(forced_tool(Wire::Anthropic, &openai), None);
        assert_eq!(
            forced_tool(Wire::Anthropic, &rest(json!({"type": "auto"}))),
            None
        );
        assert_eq!(forced_tool(Wire::Anthropic, &Map::new()), None);
        let other = rest(json!({"type": "tool", "name": "Bash"}));
        assert!(plan(HistorianMode::Stall, Wire::Anthropic, &other, &[]).is_none());
    }

    #[test]
    fn an_unreadable_transcript_gets_no_compartments() {
        let forced = rest(json!({"type": "tool", "name": "record_history"}));
        let conversation = [Message::new(Role::User, vec![Part::text("hello")])];
        let Some(HistorianPlan::Reply(reply)) = plan(
            HistorianMode::Honest,
            Wire::Anthropic,
            &forced,
            &conversation,
        ) else {
            panic!("not a reply");
        };
        let calls: Vec<_> = reply.tool_calls().collect();
        assert_eq!(calls, [("", HISTORY_TOOL, &json!({ "compartments": [] }))]);
        assert_eq!(reply.stop_reason, StopReason::ToolUse);
    }

    #[test]
    fn modes_read_back_from_their_names() {
        for mode in HistorianMode::ALL {
            assert_eq!(mode.to_string().parse::<HistorianMode>(), Ok(mode));
        }
        let error = "sleepy".parse::<HistorianMode>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown historian mode `sleepy`; use honest, garbage, overloaded, stall or slow"
        );
    }
}
