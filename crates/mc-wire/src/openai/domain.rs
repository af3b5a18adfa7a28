//! Conversion between OpenAI chat messages and the neutral conversation model.
//!
//! Into the model: `system` and `developer` become [`Role::System`]; a message's parts come
//! out as visible reasoning (`reasoning` or `reasoning_content`) first, then its content, then
//! its tool calls, which is the order the model produced them in. A `tool` message becomes
//! one [`Part::ToolResult`]; the legacy `function` role and `function_call` field map the same
//! way, paired by function name since they have no call id. Part types we do not type become
//! [`Part::Unknown`] carrying the whole part, so the raw log loses no content. A `refusal`
//! part becomes text: it is the model's words, and search and token counts must see it.
//!
//! Out of the model: used to render messages the engine writes itself; the output is a pure
//! function of the model, so the same stored rows always render to the same bytes.

use mc_core::{MediaKind, Message, Part, Role};
use serde_json::Value;

use super::message::{ChatMessage, ChatRole};
use super::part::{ChatContent, ContentPart};
use super::request::ChatRequest;
use super::tool_call::ToolCall;
use crate::arguments::{parse_arguments, tool_input_text};
use crate::error::{JsonPath, Result, WireError};

/// The conversation of a request in the neutral model, system messages included.
///
/// Fails only on a `tool` message without `tool_call_id` or a `function` message without
/// `name`, which the provider would reject too; the error names the message by its path.
pub fn to_conversation(request: &ChatRequest) -> Result<Vec<Message>> {
    let root = JsonPath::Root;
    let messages = root.key("messages");
    request
        .messages
        .iter()
        .enumerate()
        .map(|(index, message)| message_at(message, &messages.index(index)))
        .collect()
}

/// One wire message in the neutral model; see [`to_conversation`] for when it fails.
pub fn to_message(message: &ChatMessage) -> Result<Message> {
    message_at(message, &JsonPath::Root)
}

fn message_at(message: &ChatMessage, path: &JsonPath<'_>) -> Result<Message> {
    let (role, parts) = match message.role {
        ChatRole::Tool => {
            let Some(call_id) = &message.tool_call_id else {
                return Err(WireError::shape(
                    path,
                    "a `tool` message needs `tool_call_id`, the id of the call it answers",
                ));
            };
            (
                Role::Tool,
                vec![tool_result(call_id, message.content.as_ref())],
            )
        }
        ChatRole::Function => {
            let Some(name) = message.name() else {
                return Err(WireError::shape(
                    path,
                    "a `function` message needs `name`, the function it answers",
                ));
            };
            (
                Role::Tool,
                vec![tool_result(name, message.content.as_ref())],
            )
        }
        ChatRole::System | ChatRole::Developer => (Role::System, authored_parts(message)),
        ChatRole::User => (Role::User, authored_parts(message)),
        ChatRole::Assistant => (Role::Assistant, authored_parts(message)),
    };
    Ok(Message::new(role, parts))
}

fn tool_result(call_id: &str, content: Option<&ChatContent>) -> Part {
    Part::ToolResult {
        call_id: call_id.to_owned(),
        content: content_parts(content),
        is_error: false,
    }
}

/// Reasoning, content and tool calls of a message that is not a tool answer.
fn authored_parts(message: &ChatMessage) -> Vec<Part> {
    let mut parts = Vec::new();
    if let Some((_, text)) = message.reasoning() {
        parts.push(Part::Thinking {
            text: text.to_owned(),
            signature: None,
        });
    }
    parts.extend(content_parts(message.content.as_ref()));
    for call in message.tool_calls.iter().flatten() {
        parts.push(tool_call(
            &call.id,
            &call.function.name,
            &call.function.arguments,
        ));
    }
    if let Some(Value::Object(legacy)) = message.rest.get("function_call") {
        let name = legacy.get("name").and_then(Value::as_str).unwrap_or("");
        let arguments = legacy
            .get("arguments")
            .and_then(Value::as_str)
            .unwrap_or("");
        parts.push(tool_call(name, name, arguments));
    }
    parts
}

/// Arguments that are valid JSON become that JSON; anything else (broken arguments, or JSON
/// nested too deeply to store) stays a JSON string, so it is recorded as the model wrote it.
fn tool_call(id: &str, name: &str, arguments: &str) -> Part {
    let input = parse_arguments(arguments).unwrap_or_else(|| Value::String(arguments.to_owned()));
    Part::ToolCall {
        id: id.to_owned(),
        name: name.to_owned(),
        input,
    }
}

fn content_parts(content: Option<&ChatContent>) -> Vec<Part> {
    match content {
        None => Vec::new(),
        Some(ChatContent::Text(text)) => vec![Part::text(text.clone())],
        Some(ChatContent::Parts(parts)) => parts.iter().map(to_part).collect(),
    }
}

fn to_part(part: &ContentPart) -> Part {
    match part {
        ContentPart::Text(part) => Part::text(part.text.clone()),
        ContentPart::ImageUrl(part) => Part::Media {
            media: MediaKind::Image,
            source: part.image_url.clone(),
        },
        ContentPart::InputAudio(part) => Part::Media {
            media: MediaKind::Audio,
            source: part.input_audio.clone(),
        },
        ContentPart::File(part) => Part::Media {
            media: MediaKind::Document,
            source: part.file.clone(),
        },
        // A refusal stays the part it is (its type tells the model it declined), whole.
        ContentPart::Refusal(refusal) => match serde_json::to_value(part) {
            Ok(raw @ Value::Object(_)) => Part::Unknown {
                type_name: "refusal".to_owned(),
                raw,
            },
            _ => Part::text(refusal.refusal.clone()),
        },
        ContentPart::Unknown(raw) => Part::Unknown {
            type_name: raw
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            raw: Value::Object(raw.clone()),
        },
    }
}

/// Renders a neutral message as wire messages.
///
/// Usually one message; each [`Part::ToolResult`] becomes its own `tool` message, placed
/// before the rest, because OpenAI wants a call's answers right after the assistant message
/// that made it (an Anthropic-style user turn of results and text splits in two). The rest
/// keeps the message's role, except that a [`Role::Tool`] message with parts other than
/// results becomes `user`: a `tool` message without a call id is invalid.
///
/// Content is a bare string when it is a single text, else a part list; a message with no
/// content has no `content` key, except a `tool` message, which OpenAI requires to have
/// content and gets `""`, and a message of calls only, which gets `"content": null`, the form
/// OpenAI's own answers and the OpenAI SDKs' clients (Pi) give it. Dropped, because OpenAI has no place for them: redacted thinking
/// (opaque to every provider but its author), `is_error` (the text says it), signatures, and
/// unknown parts whose raw value is not an object (no codec produces those).
pub fn from_message(message: &Message) -> Vec<ChatMessage> {
    let mut out = Vec::new();
    let mut content = Vec::new();
    let mut calls = Vec::new();
    let mut reasoning: Option<String> = None;
    for part in &message.parts {
        match part {
            Part::ToolCall { id, name, input } => {
                calls.push(ToolCall::function(id, name, tool_input_text(input)))
            }
            Part::ToolResult {
                call_id,
                content: result,
                ..
            } => {
                let result = chat_content(result.iter().filter_map(from_part).collect());
                out.push(ChatMessage::tool_result(
                    call_id,
                    result.unwrap_or(ChatContent::Text(String::new())),
                ));
            }
            Part::Thinking { text, .. } => reasoning.get_or_insert_with(String::new).push_str(text),
            Part::RedactedThinking { .. } => {}
            Part::Text { .. } | Part::Media { .. } | Part::Unknown { .. } => {
                content.extend(from_part(part))
            }
        }
    }
    let has_body = !content.is_empty() || !calls.is_empty() || reasoning.is_some();
    if has_body || out.is_empty() {
        let role = match message.role {
            Role::System => ChatRole::System,
            Role::User | Role::Tool => ChatRole::User,
            Role::Assistant => ChatRole::Assistant,
        };
        let mut rendered = ChatMessage::new(role, chat_content(content));
        if !calls.is_empty() {
            rendered.tool_calls = Some(calls);
            if rendered.content.is_none() {
                rendered.set_null_content();
            }
        }
        if let Some(text) = reasoning {
            rendered
                .rest
                .insert("reasoning".to_owned(), Value::String(text));
        }
        out.push(rendered);
    }
    out
}

fn from_part(part: &Part) -> Option<ContentPart> {
    match part {
        Part::Text { text, .. } => Some(ContentPart::text(text.clone())),
        Part::Media {
            media: MediaKind::Image,
            source,
        } => Some(ContentPart::image_url(source.clone())),
        Part::Media {
            media: MediaKind::Audio,
            source,
        } => Some(ContentPart::input_audio(source.clone())),
        Part::Media {
            media: MediaKind::Document,
            source,
        } => Some(ContentPart::file(source.clone())),
        Part::Unknown {
            raw: Value::Object(raw),
            ..
        } => Some(ContentPart::Unknown(raw.clone())),
        Part::Unknown { .. }
        | Part::ToolCall { .. }
        | Part::ToolResult { .. }
        | Part::Thinking { .. }
        | Part::RedactedThinking { .. } => None,
    }
}

/// A single plain text goes out as a bare string, the form clients send most.
fn chat_content(mut parts: Vec<ContentPart>) -> Option<ChatContent> {
    match parts.as_mut_slice() {
        [] => None,
        [ContentPart::Text(only)] if only.rest.is_empty() => {
            Some(ChatContent::Text(std::mem::take(&mut only.text)))
        }
        _ => Some(ChatContent::Parts(parts)),
    }
}
