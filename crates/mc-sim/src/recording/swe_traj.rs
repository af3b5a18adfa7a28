//! mini-swe-agent trajectories (`.traj.json`).
//!
//! The file's `messages` is the exact message array of the agent's last request, in OpenAI
//! chat form, so request k is the prefix before the k-th assistant message and the whole
//! session is one shared history. Each assistant message carries the provider's answer under
//! `extra.response`: `created` (Unix seconds), `model`, and `usage` with `prompt_tokens`,
//! `completion_tokens` and `prompt_tokens_details.cached_tokens`.
//!
//! The system message goes to [`Recording::system`], not into the history, so every loader
//! hands the replay the same split. The agent acts through bash blocks in its text and
//! declares no tools, so `tools` is empty and nothing is stood in.
//!
//! A step's response is the assistant message as the history carries it (`messages[len]`),
//! which is what the next request resends; the reasoning the provider returned beside it
//! (`extra.response.choices[0].message.reasoning`) was never sent back and only shows in
//! `output_tokens`.

use std::sync::Arc;

use mc_core::Message;
use mc_wire::openai::{self, ChatMessage, ChatRole};
use serde::Deserialize;
use serde_json::Value;

use super::error::{FileErrors, Location};
use super::{RecordedUsage, Recording, RecordingError, RecordingFormat, Step};

/// The parts of a trajectory the loader reads; `info` and `instance_id` are skipped.
#[derive(Deserialize)]
struct Trajectory {
    messages: Vec<Value>,
}

/// What one assistant message's `extra.response` recorded.
struct Answer {
    created_s: Option<i64>,
    model: Option<String>,
    output_tokens: Option<u64>,
    recorded: Option<RecordedUsage>,
}

pub(super) fn load(
    name: String,
    bytes: &[u8],
    errors: FileErrors<'_>,
) -> Result<Recording, RecordingError> {
    let trajectory: Trajectory = serde_json::from_slice(bytes)
        .map_err(|source| errors.json(Location::File, "trajectory", source))?;
    let mut system = Vec::new();
    let mut history: Vec<Message> = Vec::with_capacity(trajectory.messages.len());
    let mut calls: Vec<(usize, Answer)> = Vec::new();
    for (index, value) in trajectory.messages.into_iter().enumerate() {
        let at = Location::Message(index);
        let chat: ChatMessage = serde_json::from_value(value)
            .map_err(|source| errors.json(at, "chat message", source))?;
        let message = openai::to_message(&chat).map_err(|source| errors.wire(at, source))?;
        match chat.role {
            ChatRole::System | ChatRole::Developer => {
                system.push(text_of(&message));
                continue;
            }
            ChatRole::Assistant => calls.push((history.len(), answer(&chat))),
            ChatRole::User | ChatRole::Tool | ChatRole::Function => {}
        }
        history.push(message);
    }
    let Some(model) = calls.iter().find_map(|(_, answer)| answer.model.clone()) else {
        return Err(if calls.is_empty() {
            errors.no_steps(RecordingFormat::SweTraj, "it has no assistant message")
        } else {
            errors.invalid(
                Location::File,
                "no assistant message names its model (`extra.response.model`)",
            )
        });
    };
    let first_s = calls.iter().find_map(|(_, answer)| answer.created_s);
    let history = Arc::new(history);
    let mut at_ms = 0;
    let mut steps = Vec::with_capacity(calls.len());
    for (len, answer) in calls {
        if let (Some(created), Some(first)) = (answer.created_s, first_s) {
            // Clock steps backwards between providers are clamped, keeping time monotonic.
            at_ms = at_ms.max(u64::try_from(created.saturating_sub(first)).unwrap_or(0) * 1_000);
        }
        let Some(response) = history.get(len).cloned() else {
            continue;
        };
        steps.push(Step {
            at_ms,
            messages: Arc::clone(&history),
            len,
            response,
            output_tokens: answer.output_tokens,
            recorded: answer.recorded,
            context: None,
        });
    }
    Ok(Recording {
        name,
        format: RecordingFormat::SweTraj,
        model,
        system,
        tools: Vec::new(),
        stand_ins: Vec::new(),
        steps,
    })
}

/// The text of a system message, its text parts joined.
fn text_of(message: &Message) -> String {
    message.texts().collect()
}

fn answer(chat: &ChatMessage) -> Answer {
    let response = chat
        .rest
        .get("extra")
        .and_then(|extra| extra.get("response"));
    let field = |name: &str| response.and_then(|response| response.get(name));
    let usage = field("usage");
    let count = |name: &str| {
        usage
            .and_then(|usage| usage.get(name))
            .and_then(Value::as_u64)
    };
    let cached = usage
        .and_then(|usage| usage.get("prompt_tokens_details"))
        .and_then(|details| details.get("cached_tokens"))
        .and_then(Value::as_u64);
    let recorded = count("prompt_tokens").map(|prompt_tokens| RecordedUsage {
        prompt_tokens,
        cache_read: cached,
        cache_write: None,
        input: cached.map(|cached| prompt_tokens.saturating_sub(cached)),
    });
    Answer {
        created_s: field("created").and_then(Value::as_i64),
        model: field("model").and_then(Value::as_str).map(str::to_owned),
        output_tokens: count("completion_tokens"),
        recorded,
    }
}
