//! Background agents' calls: a request that forces the `record_history` tool (or, on the
//! Responses wire, asks for structured output in the `record_history` format) is answered by
//! the simulated historian ([`crate::historian::historian_answer`]), one that forces
//! `judge_memories`, `merge_memories`, `judge_notes` or `rewrite_memories` by the simulated
//! dreamer ([`crate::dreamer::dreamer_answer`], [`crate::dreamer::merge_answer`],
//! [`crate::dreamer::notes_answer`], [`crate::dreamer::rewrite_answer`]), instead of
//! the responder, so a script or a recording plays on undisturbed while the proxy's
//! background agents run.
//!
//! [`HistorianMode`] makes those calls fail the ways a real small model or provider does
//! (a schema-breaking answer, an overload, a call that never returns) while every other call
//! is answered as usual, so tests can show the background agents' failures never reach a
//! request; the historian and the dreamer each have a mode of their own.

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;

use mc_core::dreamer::{JUDGE_TOOL, MERGE_TOOL, NOTES_TOOL, REWRITE_TOOL, STEP_TOOL};
use mc_core::historian::HISTORY_TOOL;
use mc_core::{Message, Part, Role, joined_texts};
use serde_json::{Map, Value, json};

use super::error::InvalidHistorianMode;
use super::reply::Reply;
use crate::dreamer::{dreamer_answer, merge_answer, notes_answer, rewrite_answer, step_answer};
use crate::historian::historian_answer;
use crate::script::StopReason;

/// How the simulated provider answers a background agent's calls (the historian's or the
/// dreamer's).
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

/// How a wire's request demands a structured answer, and so how the answer is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Demand {
    /// Anthropic Messages: `tool_choice: {"type": "tool", "name"}`; answered by a tool call.
    AnthropicTool,
    /// Chat Completions: `tool_choice: {"type": "function", "function": {"name"}}`; answered
    /// by a tool call.
    ChatFunction,
    /// Responses: `text.format: {"type": "json_schema", "name"}`; answered by output text
    /// holding the JSON, as structured outputs answer.
    ResponsesFormat,
}

/// How each background agent's calls are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct BackgroundModes {
    /// Calls forcing `record_history`.
    pub(crate) historian: HistorianMode,
    /// Calls forcing one of the dreamer's tools.
    pub(crate) dreamer: HistorianMode,
}

/// An honest agent's answer to the text of the last user message.
type HonestAnswer = fn(&str) -> Value;

/// The plan for a request whose unmodelled fields are `rest`, read the way `demand` says, or
/// `None` when it demands neither `record_history` nor one of the dreamer's tools (the
/// responder answers it). An honest agent-loop step takes the next of `steps` (a scripted
/// model's), while there is one.
pub(crate) fn plan(
    modes: BackgroundModes,
    steps: &mut VecDeque<Value>,
    demand: Demand,
    rest: &Map<String, Value>,
    conversation: &[Message],
) -> Option<HistorianPlan> {
    let (tool, mode, honest_answer): (&str, HistorianMode, HonestAnswer) =
        match demanded(demand, rest)? {
            HISTORY_TOOL => (HISTORY_TOOL, modes.historian, historian_input),
            JUDGE_TOOL => (JUDGE_TOOL, modes.dreamer, dreamer_input),
            MERGE_TOOL => (MERGE_TOOL, modes.dreamer, merge_input),
            NOTES_TOOL => (NOTES_TOOL, modes.dreamer, notes_input),
            REWRITE_TOOL => (REWRITE_TOOL, modes.dreamer, rewrite_input),
            STEP_TOOL => (STEP_TOOL, modes.dreamer, step_input),
            _ => return None,
        };
    let scripted = match (tool, mode) {
        (STEP_TOOL, HistorianMode::Honest | HistorianMode::Slow) => steps.pop_front(),
        _ => None,
    };
    let honest = |conversation: &[Message]| {
        let input = scripted.unwrap_or_else(|| honest_answer(&last_user_text(conversation)));
        answer(demand, tool, input)
    };
    Some(match mode {
        HistorianMode::Honest => HistorianPlan::Reply(honest(conversation)),
        HistorianMode::Slow => HistorianPlan::Later(honest(conversation)),
        HistorianMode::Garbage => HistorianPlan::Reply(answer(
            demand,
            tool,
            json!({
                "summary": "The user and the assistant worked on the code.",
                "compartments": "see summary",
            }),
        )),
        HistorianMode::Overloaded => HistorianPlan::Overloaded,
        HistorianMode::Stall => HistorianPlan::Stall,
    })
}

/// The historian's honest answer: a transcript that cannot be read gets what a lost model
/// sends, an answer with no compartments, which fails validation.
fn historian_input(transcript: &str) -> Value {
    historian_answer(transcript).unwrap_or_else(|| json!({ "compartments": [] }))
}

/// The dreamer's honest answer: a message that cannot be read gets no verdicts, which
/// keeps every memory.
fn dreamer_input(message: &str) -> Value {
    dreamer_answer(message).unwrap_or_else(|| json!({ "verdicts": [] }))
}

/// The dreamer's honest merges: a message that cannot be read gets none.
fn merge_input(message: &str) -> Value {
    merge_answer(message).unwrap_or_else(|| json!({ "merges": [] }))
}

/// The dreamer's honest note verdicts: a message that cannot be read gets none, which keeps
/// every note pending.
fn notes_input(message: &str) -> Value {
    notes_answer(message).unwrap_or_else(|| json!({ "notes": [] }))
}

/// The dreamer's honest rewrites: a message that cannot be read gets none, which leaves
/// every memory as it was.
fn rewrite_input(message: &str) -> Value {
    rewrite_answer(message).unwrap_or_else(|| json!({ "rewrites": [] }))
}

/// The dreamer's honest next step: a message that cannot be read gets `finish`, which ends
/// the loop deciding nothing.
fn step_input(message: &str) -> Value {
    step_answer(message).unwrap_or_else(|| json!({ "calls": [{ "tool": "finish" }] }))
}

/// The structured output a request demands: the forced tool's name, or the name of the
/// Responses JSON-schema format.
fn demanded(demand: Demand, rest: &Map<String, Value>) -> Option<&str> {
    let (choice, kind) = match demand {
        Demand::AnthropicTool => (rest.get("tool_choice")?, "tool"),
        Demand::ChatFunction => (rest.get("tool_choice")?, "function"),
        Demand::ResponsesFormat => (rest.get("text")?.get("format")?, "json_schema"),
    };
    if choice.get("type").and_then(Value::as_str) != Some(kind) {
        return None;
    }
    let named = match demand {
        Demand::AnthropicTool | Demand::ResponsesFormat => choice,
        Demand::ChatFunction => choice.get("function")?,
    };
    named.get("name").and_then(Value::as_str)
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

/// `input` as `demand` wants it: a call to `tool`, or its JSON as the answer's text.
fn answer(demand: Demand, tool: &str, input: Value) -> Reply {
    match demand {
        Demand::AnthropicTool | Demand::ChatFunction => Reply {
            parts: vec![Part::ToolCall {
                id: String::new(),
                name: tool.to_owned(),
                input,
            }],
            stop_reason: StopReason::ToolUse,
            output_tokens: None,
        },
        Demand::ResponsesFormat => Reply {
            parts: vec![Part::text(input.to_string())],
            stop_reason: StopReason::EndTurn,
            output_tokens: None,
        },
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

    fn format(format: Value) -> Map<String, Value> {
        let mut rest = Map::new();
        rest.insert("text".to_owned(), json!({ "format": format }));
        rest
    }

    #[test]
    fn historian_calls_are_recognised_on_every_wire_only_when_demanded() {
        let anthropic = rest(json!({"type": "tool", "name": "record_history"}));
        let openai = rest(json!({"type": "function", "function": {"name": "record_history"}}));
        let responses = format(json!({"type": "json_schema", "name": "record_history"}));
        assert_eq!(
            demanded(Demand::AnthropicTool, &anthropic),
            Some(HISTORY_TOOL)
        );
        assert_eq!(demanded(Demand::ChatFunction, &openai), Some(HISTORY_TOOL));
        assert_eq!(
            demanded(Demand::ResponsesFormat, &responses),
            Some(HISTORY_TOOL)
        );
        assert_eq!(demanded(Demand::ChatFunction, &anthropic), None);
        assert_eq!(demanded(Demand::AnthropicTool, &openai), None);
        assert_eq!(demanded(Demand::ResponsesFormat, &anthropic), None);
        assert_eq!(
            demanded(
                Demand::ResponsesFormat,
                &format(json!({"type": "json_object", "name": "record_history"}))
            ),
            None
        );
        assert_eq!(
            demanded(Demand::AnthropicTool, &rest(json!({"type": "auto"}))),
            None
        );
        assert_eq!(demanded(Demand::AnthropicTool, &Map::new()), None);
        let other = rest(json!({"type": "tool", "name": "Bash"}));
        assert!(
            plan(
                stalled(),
                &mut VecDeque::new(),
                Demand::AnthropicTool,
                &other,
                &[]
            )
            .is_none()
        );
    }

    #[test]
    fn a_responses_format_is_answered_with_the_json_as_text() {
        let demanded = format(json!({"type": "json_schema", "name": "record_history"}));
        let conversation = [Message::new(Role::User, vec![Part::text("hello")])];
        let Some(HistorianPlan::Reply(reply)) = plan(
            BackgroundModes::default(),
            &mut VecDeque::new(),
            Demand::ResponsesFormat,
            &demanded,
            &conversation,
        ) else {
            panic!("not a reply");
        };
        assert_eq!(reply.parts, [Part::text(r#"{"compartments":[]}"#)]);
        assert_eq!(reply.stop_reason, StopReason::EndTurn);
    }

    #[test]
    fn an_unreadable_transcript_gets_no_compartments() {
        let forced = rest(json!({"type": "tool", "name": "record_history"}));
        let conversation = [Message::new(Role::User, vec![Part::text("hello")])];
        let Some(HistorianPlan::Reply(reply)) = plan(
            BackgroundModes::default(),
            &mut VecDeque::new(),
            Demand::AnthropicTool,
            &forced,
            &conversation,
        ) else {
            panic!("not a reply");
        };
        let calls: Vec<_> = reply.tool_calls().collect();
        assert_eq!(calls, [("", HISTORY_TOOL, &json!({ "compartments": [] }))]);
        assert_eq!(reply.stop_reason, StopReason::ToolUse);
    }

    fn stalled() -> BackgroundModes {
        BackgroundModes {
            historian: HistorianMode::Stall,
            dreamer: HistorianMode::Stall,
        }
    }

    #[test]
    fn dreamer_calls_get_the_dreamer_mode_and_a_judgement() {
        let forced = rest(json!({"type": "tool", "name": JUDGE_TOOL}));
        let overloaded = BackgroundModes {
            historian: HistorianMode::Honest,
            dreamer: HistorianMode::Overloaded,
        };
        assert!(matches!(
            plan(
                overloaded,
                &mut VecDeque::new(),
                Demand::AnthropicTool,
                &forced,
                &[]
            ),
            Some(HistorianPlan::Overloaded)
        ));
        let conversation = [Message::new(Role::User, vec![Part::text("hello")])];
        let Some(HistorianPlan::Reply(reply)) = plan(
            BackgroundModes::default(),
            &mut VecDeque::new(),
            Demand::AnthropicTool,
            &forced,
            &conversation,
        ) else {
            panic!("not a reply");
        };
        let calls: Vec<_> = reply.tool_calls().collect();
        assert_eq!(calls, [("", JUDGE_TOOL, &json!({ "verdicts": [] }))]);
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
