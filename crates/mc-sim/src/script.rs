//! Scripts: the turns a simulated model plays, optionally conditioned on what the client sent.
//!
//! A script is JSON: either a list of turns, or an object `{"turns": [...], "final_text": "…"}`.
//! Each turn is what the model answers to one request:
//!
//! ```json
//! [
//!   {"content": [
//!      {"type": "thinking", "thinking": "Let me look first.", "signature": "sig-1"},
//!      {"type": "text", "text": "Listing the files."},
//!      {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}]},
//!   {"when": {"last_tool_result_contains": "Cargo.toml"},
//!    "content": [{"type": "text", "text": "A Rust project."}]},
//!   {"repeat": 60, "content": [{"type": "tool_use", "name": "Read", "input": {"path": "a.rs"}}]},
//!   {"content": [{"type": "text", "text": "All done."}], "stop_reason": "end_turn"}
//! ]
//! ```
//!
//! Fields of a turn (unknown fields are an error, so a typo never silently changes a script):
//! - `content` (required, non-empty): blocks of type `text` (`text`), `tool_use` (`name`,
//!   `input` object, default `{}`; the id is made by the server, unique per process run and
//!   across runs) and `thinking` (`thinking`, optional `signature`, made up when absent);
//! - `stop_reason`: `end_turn`, `tool_use`, `max_tokens` or `stop_sequence`; by default
//!   `tool_use` when the turn calls a tool, else `end_turn`;
//! - `when`: conditions on the request, all of which must hold (see [`When`]);
//! - `repeat` (default 1): the turn plays this many times in a row;
//! - `output_tokens`: the usage to report instead of counting the turn's text.
//!
//! Matching, exactly: the script keeps a cursor (the next unplayed turn, and how many of its
//! repeats have played). For each request the first turn at or after the cursor whose `when`
//! holds plays. The turns it passed over are skipped for good (the rest of a repeated turn's
//! repeats too) and the cursor moves to it; after its last repeat the cursor moves past it.
//! If no turn from the cursor on holds, or the cursor is at the end, the model answers
//! `final_text` (default "Done.") with `end_turn` and the cursor stays where it is, so a later
//! request may still match a waiting conditional turn. A request the provider rejects (over
//! the window, bad breakpoints) plays nothing.

use std::path::Path;

use mc_core::{Message, Part, Role, joined_texts};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The answer when the script has nothing (left) to play.
pub const DEFAULT_FINAL_TEXT: &str = "Done.";

/// Why the model stopped, in Anthropic's words (OpenAI's `finish_reason` is derived).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model wants tool results.
    ToolUse,
    /// The output hit `max_tokens`.
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
}

impl StopReason {
    /// Anthropic's `stop_reason`.
    pub fn as_anthropic(self) -> &'static str {
        match self {
            Self::EndTurn => "end_turn",
            Self::ToolUse => "tool_use",
            Self::MaxTokens => "max_tokens",
            Self::StopSequence => "stop_sequence",
        }
    }

    /// OpenAI's `finish_reason`.
    pub fn as_openai(self) -> &'static str {
        match self {
            Self::EndTurn | Self::StopSequence => "stop",
            Self::ToolUse => "tool_calls",
            Self::MaxTokens => "length",
        }
    }
}

/// One block a scripted turn produces.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ScriptBlock {
    /// Visible text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call; the server gives it a unique id.
    ToolUse {
        /// The tool's name.
        name: String,
        /// The arguments (a JSON object).
        #[serde(default = "empty_object")]
        input: Value,
    },
    /// Signed reasoning.
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// The signature to send; made up when absent.
        #[serde(default)]
        signature: Option<String>,
    },
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// Conditions on the request a turn answers; every one given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct When {
    /// The text of the conversation's last tool result (its text parts joined) contains this.
    pub last_tool_result_contains: Option<String>,
    /// The text parts of the last user message that has any (tool results and media are not
    /// text) contain this.
    pub last_user_text_contains: Option<String>,
    /// The conversation holds at least this many tool results in all.
    pub tool_result_count_at_least: Option<usize>,
}

impl When {
    /// Whether every given condition holds for `conversation`.
    pub fn holds(&self, conversation: &[Message]) -> bool {
        let tool_result_text = || last_tool_result_text(conversation).unwrap_or_default();
        let user_text = || last_user_text(conversation).unwrap_or_default();
        self.last_tool_result_contains
            .as_deref()
            .is_none_or(|needle| tool_result_text().contains(needle))
            && self
                .last_user_text_contains
                .as_deref()
                .is_none_or(|needle| user_text().contains(needle))
            && self
                .tool_result_count_at_least
                .is_none_or(|at_least| tool_result_count(conversation) >= at_least)
    }

    fn is_empty(&self) -> bool {
        self.last_tool_result_contains.is_none()
            && self.last_user_text_contains.is_none()
            && self.tool_result_count_at_least.is_none()
    }
}

fn last_tool_result_text(conversation: &[Message]) -> Option<String> {
    conversation
        .iter()
        .rev()
        .flat_map(|message| message.parts.iter().rev())
        .find_map(|part| match part {
            Part::ToolResult { content, .. } => Some(joined_texts(content)),
            _ => None,
        })
}

fn last_user_text(conversation: &[Message]) -> Option<String> {
    conversation
        .iter()
        .rev()
        .filter(|message| message.role == Role::User)
        .map(|message| joined_texts(&message.parts))
        .find(|text| !text.is_empty())
}

fn tool_result_count(conversation: &[Message]) -> usize {
    conversation
        .iter()
        .flat_map(|message| &message.parts)
        .filter(|part| part.is_tool_result())
        .count()
}

/// One scripted answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// What the model says, in order.
    pub content: Vec<ScriptBlock>,
    /// Why it stops; see [`Turn::stop_reason`].
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    /// When this turn may play.
    #[serde(default)]
    pub when: Option<When>,
    /// How many requests in a row it answers.
    #[serde(default = "one")]
    pub repeat: u32,
    /// Output tokens to report instead of counting the content.
    #[serde(default)]
    pub output_tokens: Option<u64>,
}

fn one() -> u32 {
    1
}

impl Turn {
    /// The stop reason given, else `tool_use` when the turn calls a tool, else `end_turn`.
    pub fn stop_reason(&self) -> StopReason {
        self.stop_reason.unwrap_or_else(|| {
            let calls_tool = self
                .content
                .iter()
                .any(|block| matches!(block, ScriptBlock::ToolUse { .. }));
            if calls_tool {
                StopReason::ToolUse
            } else {
                StopReason::EndTurn
            }
        })
    }

    fn check(&self) -> Result<(), String> {
        if self.content.is_empty() {
            return Err("`content` is empty; a turn must say something".to_owned());
        }
        if self.repeat == 0 {
            return Err("`repeat` is 0; use at least 1 or remove the turn".to_owned());
        }
        if self.when.as_ref().is_some_and(When::is_empty) {
            return Err("`when` has no condition; remove it or name one".to_owned());
        }
        for (index, block) in self.content.iter().enumerate() {
            if let ScriptBlock::ToolUse { name, input } = block {
                if name.is_empty() {
                    return Err(format!("content[{index}]: tool_use `name` is empty"));
                }
                if !input.is_object() {
                    return Err(format!(
                        "content[{index}]: tool_use `input` must be a JSON object"
                    ));
                }
            }
        }
        let calls_tool = self
            .content
            .iter()
            .any(|block| matches!(block, ScriptBlock::ToolUse { .. }));
        if self.stop_reason == Some(StopReason::ToolUse) && !calls_tool {
            return Err("`stop_reason` is tool_use but the turn calls no tool".to_owned());
        }
        Ok(())
    }
}

/// Why a script could not be loaded; names the file, the turn and the problem.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read.
    #[error("cannot read script {origin}")]
    Read {
        /// The file.
        origin: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("script {origin} is not valid JSON")]
    Json {
        /// The file.
        origin: String,
        /// What the parser said, with line and column.
        #[source]
        source: serde_json::Error,
    },
    /// The top level is neither a list of turns nor `{"turns": [...]}`.
    #[error(
        "script {origin}: {problem}; expected a JSON list of turns or {{\"turns\": [...], \"final_text\": \"...\"}}"
    )]
    Shape {
        /// The file.
        origin: String,
        /// What is wrong at the top level.
        problem: String,
    },
    /// One turn is wrong.
    #[error("script {origin}: turns[{index}] (0-based): {problem}")]
    Turn {
        /// The file.
        origin: String,
        /// Which turn, counting from 0.
        index: usize,
        /// What is wrong with it.
        problem: String,
    },
}

/// A loaded script and how far it has played.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    turns: Vec<Turn>,
    final_text: String,
    cursor: usize,
    played: u32,
}

impl Script {
    /// A script of these turns, answering [`DEFAULT_FINAL_TEXT`] when they run out.
    pub fn new(turns: Vec<Turn>) -> Self {
        Self {
            turns,
            final_text: DEFAULT_FINAL_TEXT.to_owned(),
            cursor: 0,
            played: 0,
        }
    }

    /// Reads and checks a script file.
    pub fn load(path: &Path) -> Result<Self, ScriptError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            origin: origin.clone(),
            source,
        })?;
        Self::parse(&text, &origin)
    }

    /// Parses and checks script text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, ScriptError> {
        let value: Value = serde_json::from_str(text).map_err(|source| ScriptError::Json {
            origin: origin.to_owned(),
            source,
        })?;
        let shape = |problem: &str| ScriptError::Shape {
            origin: origin.to_owned(),
            problem: problem.to_owned(),
        };
        let (list, final_text) = match value {
            Value::Array(list) => (list, None),
            Value::Object(mut object) => {
                let Some(Value::Array(list)) = object.shift_remove("turns") else {
                    return Err(shape("the object has no `turns` list"));
                };
                let final_text = match object.shift_remove("final_text") {
                    None => None,
                    Some(Value::String(text)) => Some(text),
                    Some(_) => return Err(shape("`final_text` is not a string")),
                };
                if let Some(key) = object.keys().next() {
                    return Err(shape(&format!("unknown top-level field `{key}`")));
                }
                (list, final_text)
            }
            _ => return Err(shape("the top level is neither a list nor an object")),
        };
        let turns = list
            .into_iter()
            .enumerate()
            .map(|(index, raw)| {
                let turn_error = |problem: String| ScriptError::Turn {
                    origin: origin.to_owned(),
                    index,
                    problem,
                };
                let turn: Turn =
                    serde_json::from_value(raw).map_err(|error| turn_error(error.to_string()))?;
                turn.check().map_err(turn_error)?;
                Ok(turn)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut script = Self::new(turns);
        if let Some(text) = final_text {
            script.final_text = text;
        }
        Ok(script)
    }

    /// The turns, in order.
    pub fn turns(&self) -> &[Turn] {
        &self.turns
    }

    /// The text answered once nothing matches.
    pub fn final_text(&self) -> &str {
        &self.final_text
    }

    /// The turn that would answer `conversation` now, by index; `None` means the final text.
    /// Does not move the cursor: call [`Script::advance`] once the answer is sent.
    pub fn next_turn(&self, conversation: &[Message]) -> Option<usize> {
        (self.cursor..self.turns.len()).find(|&index| {
            self.turns[index]
                .when
                .as_ref()
                .is_none_or(|when| when.holds(conversation))
        })
    }

    /// Records that turn `index` (from [`Script::next_turn`]) played, skipping what it passed.
    pub fn advance(&mut self, index: usize) {
        let Some(turn) = self.turns.get(index) else {
            return;
        };
        if index != self.cursor {
            self.cursor = index;
            self.played = 0;
        }
        self.played += 1;
        if self.played >= turn.repeat {
            self.cursor = index + 1;
            self.played = 0;
        }
    }

    /// Whether every turn has played or been skipped.
    pub fn is_exhausted(&self) -> bool {
        self.cursor >= self.turns.len()
    }
}

#[cfg(test)]
mod tests;
