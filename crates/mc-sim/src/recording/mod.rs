//! Recorded real sessions, loaded into one shape the replay harness and the trajectory
//! responder can step through.
//!
//! A [`Recording`] is one agent session: the system prompt and tools it ran with, and one
//! [`Step`] per model call, each holding the conversation the client sent and the answer the
//! model gave. Three on-disk formats load into it (see [`RecordingFormat`]):
//! - mini-swe-agent trajectories (`.traj.json`, OpenAI chat; `swe_traj.rs`);
//! - raw Anthropic API captures (`.jsonl`, one request/response pair per line;
//!   `anthropic_capture.rs`);
//! - Claude Code session files (`~/.claude/projects/<project>/<session>.jsonl`;
//!   `claude_code.rs`).
//!
//! Steps of one session share their history: step k's request is `messages[..len]` of an
//! `Arc` that later steps reuse as long as the client only appended to it, so a 300-call
//! session holds its messages once, not 300 times. A step that rewrote the history (a
//! compaction) starts a new `Arc`.
//!
//! Where a format lacks something the replay needs (Claude Code session files keep neither
//! the system prompt nor the tool definitions), the loader substitutes a realistic stand-in
//! and names it in [`Recording::stand_ins`], so every figure computed from it can say so.
//!
//! ```no_run
//! use std::path::Path;
//! use mc_sim::recording::{self, RecordingFormat};
//!
//! let recordings = recording::load(Path::new("shared/data/swe-trajectories"), None)?;
//! for recording in &recordings {
//!     assert_eq!(recording.format, RecordingFormat::SweTraj);
//!     let first = &recording.steps[0];
//!     assert!(first.request_messages().len() < recording.steps[1].request_messages().len());
//! }
//! # Ok::<(), mc_sim::recording::RecordingError>(())
//! ```

mod anthropic_capture;
mod claude_code;
mod detect;
mod error;
mod history;
mod load;
mod stand_in;
mod swe_traj;
mod timestamp;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use mc_core::Message;
use serde::{Deserialize, Serialize};

pub use error::{Location, RecordingError};
pub use load::load;

/// Which on-disk format a recording came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RecordingFormat {
    /// A mini-swe-agent `.traj.json` (OpenAI chat messages).
    SweTraj,
    /// Raw Anthropic Messages API traffic, one `{request, response}` object per line.
    AnthropicCapture,
    /// A Claude Code session file (`~/.claude/projects/<project>/<session>.jsonl`).
    ClaudeCode,
}

impl RecordingFormat {
    /// Every format, in the order help texts list them.
    pub const ALL: [Self; 3] = [Self::SweTraj, Self::AnthropicCapture, Self::ClaudeCode];

    /// The name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SweTraj => "swe-traj",
            Self::AnthropicCapture => "anthropic-capture",
            Self::ClaudeCode => "claude-code",
        }
    }
}

impl fmt::Display for RecordingFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RecordingFormat {
    type Err = RecordingError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|format| format.as_str() == name)
            .ok_or_else(|| RecordingError::UnknownFormat {
                name: name.to_owned(),
            })
    }
}

/// A tool definition as the model saw it (or as the stand-in describes it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name, which `tool_use` blocks cite.
    pub name: String,
    /// What the model is told the tool does.
    pub description: String,
    /// The JSON Schema of the tool's input, key order as recorded.
    pub input_schema: serde_json::Value,
}

/// One recorded agent session.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// The file's name without its format suffix (`django__django-11138`, a session id).
    pub name: String,
    /// Which format it was loaded from.
    pub format: RecordingFormat,
    /// The model that answered the recorded steps.
    pub model: String,
    /// The system prompt, one entry per text block (or per system message).
    pub system: Vec<String>,
    /// The tools offered to the model; empty for agents that act through text.
    pub tools: Vec<ToolSpec>,
    /// What was substituted because the recording lacks it (`"system prompt"`, `"tools"`).
    pub stand_ins: Vec<String>,
    /// The model calls, in the order the client made them.
    pub steps: Vec<Step>,
}

/// One model call of a recording.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Request time in milliseconds since the recording's first request.
    pub at_ms: u64,
    /// A history shared with neighbouring steps; this request is `messages[..len]`.
    pub messages: Arc<Vec<Message>>,
    /// How many messages of `messages` this request sent.
    pub len: usize,
    /// The assistant answer the model gave.
    pub response: Message,
    /// Recorded output tokens, when the recording has them.
    pub output_tokens: Option<u64>,
    /// The provider's usage report for this call, when the recording has it.
    pub recorded: Option<RecordedUsage>,
    /// The system prompt and tools this request was sent with, when they differ from the
    /// recording's (Claude Code's compaction call runs with a summariser prompt and one tool).
    pub context: Option<Arc<StepContext>>,
}

/// A system prompt and tool list that one step used instead of the recording's own.
#[derive(Debug, Clone, PartialEq)]
pub struct StepContext {
    /// The system prompt's text blocks.
    pub system: Vec<String>,
    /// The tool definitions.
    pub tools: Vec<ToolSpec>,
}

impl Recording {
    /// The system prompt and tools `step` was sent with.
    pub fn context_of<'a>(&'a self, step: &'a Step) -> (&'a [String], &'a [ToolSpec]) {
        match &step.context {
            Some(context) => (&context.system, &context.tools),
            None => (&self.system, &self.tools),
        }
    }
}

impl Step {
    /// The conversation this request sent (system prompt and tools excluded).
    pub fn request_messages(&self) -> &[Message] {
        // `len` never exceeds the history the loaders build; the fallback only guards
        // hand-built steps.
        self.messages.get(..self.len).unwrap_or(&self.messages)
    }
}

/// Prompt usage as the provider reported it for one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedUsage {
    /// The whole prompt: Anthropic's `input + cache_creation + cache_read`, OpenAI's
    /// `prompt_tokens`.
    pub prompt_tokens: u64,
    /// Tokens served from the cache (`cache_read_input_tokens`, `cached_tokens`).
    pub cache_read: Option<u64>,
    /// Tokens written to the cache (`cache_creation_input_tokens`); OpenAI reports none.
    pub cache_write: Option<u64>,
    /// Uncached input tokens (Anthropic's `input_tokens`; OpenAI's `prompt - cached`).
    pub input: Option<u64>,
}
