//! What the simulated model answers, before it is written in a provider's wire format.
//!
//! Scripts and recordings both produce a [`Reply`] in the neutral conversation model, so the
//! Anthropic and OpenAI writers serve either. Only the parts a model can produce survive
//! (text, tool calls, thinking); a recorded answer's other parts are dropped.

use mc_core::{Message, Part};
use serde_json::Value;

use crate::script::{ScriptBlock, StopReason, Turn};

/// One answer of the simulated model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reply {
    /// Text, tool calls and thinking, in order. Tool calls with an empty id and thinking
    /// without a signature get them from [`Reply::fill_ids`] when written.
    pub(crate) parts: Vec<Part>,
    /// Why the model stopped.
    pub(crate) stop_reason: StopReason,
    /// Output tokens to report; counted from the parts when `None`.
    pub(crate) output_tokens: Option<u64>,
}

impl Reply {
    /// The answer once a script or a recording has nothing left.
    pub(crate) fn final_text(text: &str) -> Self {
        Self {
            parts: vec![Part::text(text)],
            stop_reason: StopReason::EndTurn,
            output_tokens: None,
        }
    }

    /// A scripted turn's answer.
    pub(crate) fn from_turn(turn: &Turn) -> Self {
        let parts = turn
            .content
            .iter()
            .map(|block| match block {
                ScriptBlock::Text { text } => Part::text(text.clone()),
                ScriptBlock::ToolUse { name, input } => Part::ToolCall {
                    id: String::new(),
                    name: name.clone(),
                    input: input.clone(),
                },
                ScriptBlock::Thinking {
                    thinking,
                    signature,
                } => Part::Thinking {
                    text: thinking.clone(),
                    signature: signature.clone(),
                },
            })
            .collect();
        Self {
            parts,
            stop_reason: turn.stop_reason(),
            output_tokens: turn.output_tokens,
        }
    }

    /// A recorded answer, keeping its tool-call ids.
    pub(crate) fn from_recorded(message: &Message, output_tokens: Option<u64>) -> Self {
        let parts: Vec<Part> = message
            .parts
            .iter()
            .filter(|part| {
                matches!(
                    part,
                    Part::Text { .. }
                        | Part::ToolCall { .. }
                        | Part::Thinking { .. }
                        | Part::RedactedThinking { .. }
                )
            })
            .cloned()
            .collect();
        let calls_tool = parts
            .iter()
            .any(|part| matches!(part, Part::ToolCall { .. }));
        let parts = if parts.is_empty() {
            vec![Part::text("")]
        } else {
            parts
        };
        Self {
            parts,
            stop_reason: if calls_tool {
                StopReason::ToolUse
            } else {
                StopReason::EndTurn
            },
            output_tokens,
        }
    }

    /// Gives tool calls without an id one from `make_id`, and thinking without a signature a
    /// stand-in one.
    pub(crate) fn fill_ids(&mut self, make_id: fn() -> String) {
        for part in &mut self.parts {
            match part {
                Part::ToolCall { id, .. } if id.is_empty() => *id = make_id(),
                Part::Thinking { signature, .. } if signature.is_none() => {
                    *signature = Some(super::ids::signature());
                }
                _ => {}
            }
        }
    }

    /// The text the output-token count is taken over: everything the model generated.
    pub(crate) fn generated_text(&self) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text { text, .. } | Part::Thinking { text, .. } => out.push_str(text),
                Part::ToolCall { name, input, .. } => {
                    out.push_str(name);
                    out.push_str(&input.to_string());
                }
                Part::RedactedThinking { .. }
                | Part::ToolResult { .. }
                | Part::Media { .. }
                | Part::Unknown { .. } => {}
            }
            out.push('\n');
        }
        out
    }

    /// The visible text, joined; what an OpenAI `content` carries.
    pub(crate) fn text(&self) -> Option<String> {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|part| match part {
                Part::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        (!texts.is_empty()).then(|| texts.concat())
    }

    /// The tool calls as `(id, name, input)`.
    pub(crate) fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.parts.iter().filter_map(|part| match part {
            Part::ToolCall { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }
}
