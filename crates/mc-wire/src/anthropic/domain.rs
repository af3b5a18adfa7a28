//! Conversion between Anthropic wire messages and the neutral conversation model.
//!
//! Into the model: every block maps to a [`Part`]; blocks we do not type become
//! [`Part::Unknown`] carrying the whole block, so the raw log loses no content. Wire details
//! that are not content (`cache_control`, the string-or-blocks form) are not part of the
//! model, which is why a message hashes the same whichever breakpoints the client set.
//!
//! Out of the model: used to render messages the engine writes itself; the output is a pure
//! function of the model, so the same stored rows always render to the same bytes.

use mc_core::{MediaKind, Message as CoreMessage, Part, Role};
use serde_json::{Map, Value};

use super::block::{
    BlockContent, ContentBlock, MediaBlock, MediaBlockKind, RedactedThinkingBlock, ThinkingBlock,
    ToolResultBlock, ToolUseBlock,
};
use super::request::{Message, MessageRole, MessagesRequest};

/// The conversation of a request in the neutral model (the system prompt is not a message).
pub fn to_conversation(request: &MessagesRequest) -> Vec<CoreMessage> {
    request.messages.iter().map(to_message).collect()
}

/// Wire messages in the neutral model, by value: strings move instead of being copied, which
/// matters on the proxy's request path where a conversation can be megabytes.
pub fn into_conversation(messages: Vec<Message>) -> Vec<CoreMessage> {
    messages.into_iter().map(into_message).collect()
}

/// One wire message in the neutral model.
pub fn to_message(message: &Message) -> CoreMessage {
    into_message(message.clone())
}

/// One wire message in the neutral model, by value.
pub fn into_message(message: Message) -> CoreMessage {
    let role = match message.role {
        MessageRole::User => Role::User,
        MessageRole::Assistant => Role::Assistant,
        MessageRole::System => Role::System,
    };
    CoreMessage::new(role, content_parts(message.content))
}

fn content_parts(content: BlockContent) -> Vec<Part> {
    match content {
        BlockContent::Text(text) => vec![Part::text(text)],
        BlockContent::Blocks(blocks) => blocks.into_iter().map(to_part).collect(),
    }
}

fn to_part(block: ContentBlock) -> Part {
    match block {
        ContentBlock::Text(block) => {
            // The client's markers are the engine's to place; every other field stays.
            let mut fields = block.rest;
            fields.shift_remove("cache_control");
            Part::Text {
                text: block.text,
                fields: (!fields.is_empty()).then(|| Box::new(fields)),
            }
        }
        ContentBlock::Media(block) => Part::Media {
            media: match block.kind {
                MediaBlockKind::Image => MediaKind::Image,
                MediaBlockKind::Document => MediaKind::Document,
            },
            source: block.source,
        },
        ContentBlock::ToolUse(block) => Part::ToolCall {
            id: block.id,
            name: block.name,
            input: block.input,
        },
        ContentBlock::ToolResult(block) => Part::ToolResult {
            call_id: block.tool_use_id,
            content: block.content.map(content_parts).unwrap_or_default(),
            is_error: block.is_error.unwrap_or(false),
        },
        ContentBlock::Thinking(block) => Part::Thinking {
            text: block.thinking,
            signature: block.signature,
        },
        ContentBlock::RedactedThinking(block) => Part::RedactedThinking { data: block.data },
        ContentBlock::Unknown(raw) => Part::Unknown {
            type_name: raw
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            raw: Value::Object(raw),
        },
    }
}

/// Renders a neutral message as a wire message.
///
/// Content is always a block list (never the bare-string form), so adding a
/// `cache_control` marker later never changes the message's shape. OpenAI's `tool` role
/// becomes a `user` message, where Anthropic carries tool results.
pub fn from_message(message: &CoreMessage) -> Message {
    into_wire_message(message.clone())
}

/// [`from_message`] by value.
pub fn into_wire_message(message: CoreMessage) -> Message {
    let role = match message.role {
        Role::User | Role::Tool => MessageRole::User,
        Role::Assistant => MessageRole::Assistant,
        Role::System => MessageRole::System,
    };
    let blocks = message.parts.into_iter().map(from_part).collect();
    Message::new(role, BlockContent::Blocks(blocks))
}

fn from_part(part: Part) -> ContentBlock {
    match part {
        Part::Text { text, fields } => ContentBlock::text_with_fields(text, fields.map(|f| *f)),
        Part::ToolCall { id, name, input } => {
            ContentBlock::ToolUse(ToolUseBlock::new(id, name, input))
        }
        Part::ToolResult {
            call_id,
            content,
            is_error,
        } => {
            let blocks = BlockContent::Blocks(content.into_iter().map(from_part).collect());
            ContentBlock::ToolResult(ToolResultBlock::new(call_id, Some(blocks), is_error))
        }
        Part::Thinking { text, signature } => {
            ContentBlock::Thinking(ThinkingBlock::new(text, signature))
        }
        Part::RedactedThinking { data } => {
            ContentBlock::RedactedThinking(RedactedThinkingBlock::new(data))
        }
        Part::Media {
            media: MediaKind::Image,
            source,
        } => ContentBlock::Media(MediaBlock::new(MediaBlockKind::Image, source)),
        Part::Media {
            media: MediaKind::Document,
            source,
        } => ContentBlock::Media(MediaBlock::new(MediaBlockKind::Document, source)),
        Part::Media {
            media: MediaKind::Audio,
            source,
        } => {
            // Anthropic has no audio block; the clip is carried as an unknown block so it is
            // not lost, and the provider will say so if it ever receives one.
            let mut raw = Map::new();
            raw.insert("type".to_owned(), Value::from("input_audio"));
            raw.insert("input_audio".to_owned(), source);
            ContentBlock::Unknown(raw)
        }
        Part::Unknown { type_name, raw } => match raw {
            Value::Object(raw) => ContentBlock::Unknown(raw),
            other => {
                let mut raw = Map::new();
                raw.insert("type".to_owned(), Value::from(type_name));
                raw.insert("value".to_owned(), other);
                ContentBlock::Unknown(raw)
            }
        },
    }
}
