//! Events of the Anthropic Messages SSE stream, and folding them into the final message.
//!
//! The proxy forwards stream bytes untouched; these types parse the tee'd copy (usage, stop
//! reason) and let the simulator write streams a real client accepts.

use serde_json::{Map, Value};

use super::block::ContentBlock;
use super::response::{MessagesResponse, Usage};
use crate::error::{JsonPath, Result, WireError};
use crate::object::{
    FromJson, KeyOrder, ObjectReader, WireObject, encode_json, parse_body, wire_serde,
};
use crate::wire_object::wire_object;

/// The `type` of a stream event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// `message_start`: carries the message shell and the input usage.
    MessageStart,
    /// `content_block_start`: a new block at `index`.
    ContentBlockStart,
    /// `content_block_delta`: a fragment for the block at `index`.
    ContentBlockDelta,
    /// `content_block_stop`: the block at `index` is complete.
    ContentBlockStop,
    /// `message_delta`: stop reason and final usage.
    MessageDelta,
    /// `message_stop`: the end.
    MessageStop,
    /// `ping`: keep-alive.
    Ping,
    /// `error`: the provider failed mid-stream (e.g. `overloaded_error`).
    Error,
    /// A type this codec does not know; kept as sent.
    Other(String),
}

impl EventKind {
    fn parse(name: &str) -> Self {
        match name {
            "message_start" => Self::MessageStart,
            "content_block_start" => Self::ContentBlockStart,
            "content_block_delta" => Self::ContentBlockDelta,
            "content_block_stop" => Self::ContentBlockStop,
            "message_delta" => Self::MessageDelta,
            "message_stop" => Self::MessageStop,
            "ping" => Self::Ping,
            "error" => Self::Error,
            other => Self::Other(other.to_owned()),
        }
    }

    /// The wire name, which is also the SSE `event:` name.
    pub fn as_str(&self) -> &str {
        match self {
            Self::MessageStart => "message_start",
            Self::ContentBlockStart => "content_block_start",
            Self::ContentBlockDelta => "content_block_delta",
            Self::ContentBlockStop => "content_block_stop",
            Self::MessageDelta => "message_delta",
            Self::MessageStop => "message_stop",
            Self::Ping => "ping",
            Self::Error => "error",
            Self::Other(name) => name,
        }
    }
}

/// One `data:` payload of the stream.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamEvent {
    /// The event type.
    pub kind: EventKind,
    /// The message shell (`message_start`).
    pub message: Option<MessagesResponse>,
    /// The block index (`content_block_*`).
    pub index: Option<u64>,
    /// The new block (`content_block_start`).
    pub content_block: Option<ContentBlock>,
    /// The fragment (`content_block_delta`) or the stop reason (`message_delta`), kept as sent.
    pub delta: Option<Value>,
    /// Usage (`message_delta`).
    pub usage: Option<Usage>,
    /// Unmodelled fields (`error` payloads, future fields).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl StreamEvent {
    /// Decodes one event's `data:` payload.
    pub fn decode(data: &[u8], limit_bytes: usize) -> Result<Self> {
        Self::from_json(parse_body(data, limit_bytes)?, &JsonPath::Root)
    }

    /// Encodes the payload; a pure function of its value.
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }

    /// An event of `kind` with no fields but its type.
    pub fn new(kind: EventKind) -> Self {
        Self {
            kind,
            message: None,
            index: None,
            content_block: None,
            delta: None,
            usage: None,
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }

    /// The event's `type` string.
    pub fn type_name(&self) -> &str {
        self.kind.as_str()
    }

    /// The error payload of an `error` event.
    pub fn error(&self) -> Option<&Value> {
        self.rest.get("error")
    }
}

impl FromJson for StreamEvent {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let kind: String = reader.require(0)?;
        let message = reader.take(1)?;
        let index = reader.take(2)?;
        let content_block = reader.take(3)?;
        let delta = reader.take(4)?;
        let usage = reader.take(5)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            kind: EventKind::parse(&kind),
            message,
            index,
            content_block,
            delta,
            usage,
            rest,
            order,
        })
    }
}

wire_object!(
    StreamEvent,
    type_from = StreamEvent::type_name,
    [
        1 => "message": message as optional,
        2 => "index": index as optional,
        3 => "content_block": content_block as optional,
        4 => "delta": delta as optional,
        5 => "usage": usage as optional,
    ]
);

wire_serde!(StreamEvent);

/// Folds stream events into the message they describe.
///
/// Text, thinking and signature deltas append to their block; `input_json_delta` fragments
/// are joined and parsed when the block stops; `message_delta` sets the stop reason and
/// merges usage. A stream that breaks the protocol (a delta for a block never started, tool
/// input that is not JSON) is an error naming the event, never a panic.
#[derive(Debug, Default)]
pub struct MessageAccumulator {
    message: Option<MessagesResponse>,
    partial_json: Vec<(usize, String)>,
    events: usize,
    stopped: bool,
}

impl MessageAccumulator {
    /// An accumulator before `message_start`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Folds one event in.
    pub fn push(&mut self, event: &StreamEvent) -> Result<()> {
        let position = self.events;
        self.events += 1;
        let path = JsonPath::Root;
        let event_path = path.index(position);
        match event.kind {
            EventKind::MessageStart => {
                let Some(message) = &event.message else {
                    return Err(WireError::shape(
                        &event_path,
                        "message_start without `message`",
                    ));
                };
                self.message = Some(message.clone());
            }
            EventKind::ContentBlockStart => {
                let (message, index) = self.target(event, &event_path)?;
                let Some(block) = &event.content_block else {
                    return Err(WireError::shape(
                        &event_path,
                        "content_block_start without `content_block`",
                    ));
                };
                if index != message.content.len() {
                    return Err(WireError::shape(
                        &event_path,
                        format!(
                            "block {index} started but {} blocks exist",
                            message.content.len()
                        ),
                    ));
                }
                message.content.push(block.clone());
            }
            EventKind::ContentBlockDelta => self.apply_delta(event, &event_path)?,
            EventKind::ContentBlockStop => self.finish_block(event, &event_path)?,
            EventKind::MessageDelta => {
                let Some(message) = self.message.as_mut() else {
                    return Err(WireError::shape(
                        &event_path,
                        "message_delta before message_start",
                    ));
                };
                if let Some(Value::Object(delta)) = &event.delta {
                    for (key, value) in delta {
                        message.rest.insert(key.clone(), value.clone());
                    }
                }
                if let Some(update) = &event.usage {
                    message
                        .usage
                        .get_or_insert_with(Usage::default)
                        .merge(update);
                }
            }
            EventKind::MessageStop => self.stopped = true,
            EventKind::Ping | EventKind::Error | EventKind::Other(_) => {}
        }
        Ok(())
    }

    /// The message so far (after `message_start`).
    pub fn message(&self) -> Option<&MessagesResponse> {
        self.message.as_ref()
    }

    /// Whether `message_stop` arrived.
    pub fn is_complete(&self) -> bool {
        self.stopped
    }

    /// The final message, or `None` if the stream never started.
    pub fn finish(self) -> Option<MessagesResponse> {
        self.message
    }

    fn target<'a>(
        &'a mut self,
        event: &StreamEvent,
        path: &JsonPath<'_>,
    ) -> Result<(&'a mut MessagesResponse, usize)> {
        let Some(message) = self.message.as_mut() else {
            return Err(WireError::shape(
                path,
                format!("{} before message_start", event.kind.as_str()),
            ));
        };
        let Some(index) = event.index.and_then(|index| usize::try_from(index).ok()) else {
            return Err(WireError::shape(
                path,
                format!("{} without `index`", event.kind.as_str()),
            ));
        };
        Ok((message, index))
    }

    fn apply_delta(&mut self, event: &StreamEvent, path: &JsonPath<'_>) -> Result<()> {
        let Some(delta) = &event.delta else {
            return Err(WireError::shape(
                path,
                "content_block_delta without `delta`",
            ));
        };
        let kind = delta.get("type").and_then(Value::as_str).unwrap_or("");
        let field = |name: &str| -> Result<&str> {
            delta.get(name).and_then(Value::as_str).ok_or_else(|| {
                WireError::shape(
                    &path.key("delta"),
                    format!("{kind} without a string `{name}`"),
                )
            })
        };
        if kind == "input_json_delta" {
            let fragment = field("partial_json")?.to_owned();
            let (_, index) = self.target(event, path)?;
            match self.partial_json.iter_mut().find(|(at, _)| *at == index) {
                Some((_, buffer)) => buffer.push_str(&fragment),
                None => self.partial_json.push((index, fragment)),
            }
            return Ok(());
        }
        let (message, index) = self.target(event, path)?;
        let Some(block) = message.content.get_mut(index) else {
            return Err(WireError::shape(
                path,
                format!("delta for block {index}, which never started"),
            ));
        };
        match (kind, block) {
            ("text_delta", ContentBlock::Text(text)) => text.text.push_str(field("text")?),
            ("thinking_delta", ContentBlock::Thinking(thinking)) => {
                thinking.thinking.push_str(field("thinking")?)
            }
            ("signature_delta", ContentBlock::Thinking(thinking)) => {
                thinking.signature = Some(field("signature")?.to_owned());
            }
            ("citations_delta", block) => {
                let citation = delta.get("citation").cloned().unwrap_or(Value::Null);
                let citations = block
                    .rest_mut()
                    .entry("citations")
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(list) = citations {
                    list.push(citation);
                }
            }
            (kind, block) => {
                return Err(WireError::shape(
                    path,
                    format!(
                        "delta `{kind}` does not apply to a `{}` block",
                        block.type_name()
                    ),
                ));
            }
        }
        Ok(())
    }

    fn finish_block(&mut self, event: &StreamEvent, path: &JsonPath<'_>) -> Result<()> {
        let (_, index) = self.target(event, path)?;
        let Some(position) = self.partial_json.iter().position(|(at, _)| *at == index) else {
            return Ok(());
        };
        let (_, json) = self.partial_json.swap_remove(position);
        let (message, _) = self.target(event, path)?;
        let Some(ContentBlock::ToolUse(tool_use)) = message.content.get_mut(index) else {
            return Err(WireError::shape(
                path,
                format!("input_json_delta for block {index}, which is not tool_use"),
            ));
        };
        if !json.is_empty() {
            tool_use.input = serde_json::from_str(&json).map_err(|error| {
                WireError::shape(
                    path,
                    format!("tool input of block {index} is not JSON: {error}"),
                )
            })?;
        }
        Ok(())
    }
}
