//! The Anthropic Messages request (`POST /v1/messages`).

use serde_json::{Map, Value};

use super::block::BlockContent;
use crate::error::{JsonPath, Result, WireError, type_name};
use crate::object::{
    FromJson, KeyOrder, ObjectReader, WireObject, encode_json, encode_with_raw_field, parse_body,
    wire_serde,
};
use crate::wire_object::wire_object;

/// A Messages API request body.
///
/// Typed where the engine reads or rewrites; everything else (`max_tokens`, `temperature`,
/// `metadata`, `thinking`, `tool_choice`, `context_management`, future fields) rides in
/// `rest` and goes back out unchanged, in its original position.
#[derive(Debug, Clone, PartialEq)]
pub struct MessagesRequest {
    /// The model name.
    pub model: String,
    /// The conversation.
    pub messages: Vec<Message>,
    /// The system prompt: a string or text blocks.
    pub system: Option<BlockContent>,
    /// Tool definitions.
    pub tools: Option<Vec<Tool>>,
    /// Whether the client asked for an SSE stream.
    pub stream: Option<bool>,
    /// Unmodelled fields.
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl MessagesRequest {
    /// Decodes a request body no larger than `limit_bytes`.
    pub fn decode(body: &[u8], limit_bytes: usize) -> Result<Self> {
        Self::from_json(parse_body(body, limit_bytes)?, &JsonPath::Root)
    }

    /// Encodes the request; a pure function of its value.
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }

    /// Encodes the request as [`Self::encode`] would with `messages_json` as its message
    /// list: the bytes serde_json writes for the messages (`[` … `]`, compact), which the
    /// caller may have assembled from messages it encoded on an earlier request. The
    /// request's own `messages` are not written.
    pub fn encode_with_messages(&self, messages_json: &[u8]) -> Vec<u8> {
        encode_with_raw_field(self, MESSAGES_FIELD, messages_json).0
    }

    /// The encoding of the request around its message list: the bytes before the list and
    /// the bytes after it, so that `before + list + after` is what
    /// [`Self::encode_with_messages`] writes for that list. Lets a caller encode the rest of
    /// a request once and reuse it for requests that differ only in their messages.
    pub fn encode_around_messages(&self) -> (Vec<u8>, Vec<u8>) {
        let (mut before, at) = encode_with_raw_field(self, MESSAGES_FIELD, &[]);
        let after = before.split_off(at.unwrap_or(before.len()));
        (before, after)
    }

    /// Whether the response will be streamed.
    pub fn is_stream(&self) -> bool {
        self.stream == Some(true)
    }

    /// Sets `marker` as the `cache_control` of the last system block, when the system prompt
    /// is in block form (the bare-string form has no block to carry it).
    pub fn mark_last_system_block(&mut self, marker: Value) {
        if let Some(BlockContent::Blocks(blocks)) = &mut self.system
            && let Some(last) = blocks.last_mut()
        {
            last.set_cache_control(Some(marker));
        }
    }

    /// Sets `marker` as the `cache_control` of block `block` of message `message`, when that
    /// message is in block form and has the block.
    pub fn mark_message_block(&mut self, message: usize, block: usize, marker: Value) {
        if let Some(message) = self.messages.get_mut(message) {
            message.mark_block(block, marker);
        }
    }

    /// `metadata.user_id`, where Claude Code writes its session id.
    pub fn metadata_user_id(&self) -> Option<&str> {
        self.rest.get("metadata")?.get("user_id")?.as_str()
    }
}

impl FromJson for MessagesRequest {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let model = reader.require(0)?;
        let messages = reader.require(1)?;
        let system = reader.take(2)?;
        let tools = reader.take(3)?;
        let stream = reader.take(4)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            model,
            messages,
            system,
            tools,
            stream,
            rest,
            order,
        })
    }
}

/// The index of `messages` among [`MessagesRequest`]'s typed fields.
const MESSAGES_FIELD: usize = 1;

wire_object!(
    MessagesRequest,
    [
        0 => "model": model,
        1 => "messages": messages,
        2 => "system": system as optional,
        3 => "tools": tools as optional,
        4 => "stream": stream as optional,
    ]
);

/// Who wrote a message. Claude Code also sends `system` messages inside the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageRole {
    /// `user`.
    User,
    /// `assistant`.
    Assistant,
    /// `system`.
    System,
}

impl MessageRole {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::System => "system",
        }
    }
}

impl FromJson for MessageRole {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        match value.as_str() {
            Some("user") => Ok(Self::User),
            Some("assistant") => Ok(Self::Assistant),
            Some("system") => Ok(Self::System),
            Some(other) => Err(WireError::shape(
                path,
                format!("unknown role `{other}`: expected `user`, `assistant` or `system`"),
            )),
            None => Err(WireError::shape(
                path,
                format!("expected a role string, found {}", type_name(&value)),
            )),
        }
    }
}

impl serde::Serialize for MessageRole {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who wrote it.
    pub role: MessageRole,
    /// A string or blocks, in the form the client sent.
    pub content: BlockContent,
    /// Unmodelled fields.
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl Message {
    /// A message with no extra fields.
    pub fn new(role: MessageRole, content: BlockContent) -> Self {
        Self {
            role,
            content,
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }

    /// Sets `marker` as the `cache_control` of block `block`, when the message is in block
    /// form and has the block.
    pub fn mark_block(&mut self, block: usize, marker: Value) {
        if let BlockContent::Blocks(blocks) = &mut self.content
            && let Some(block) = blocks.get_mut(block)
        {
            block.set_cache_control(Some(marker));
        }
    }
}

impl FromJson for Message {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let role = reader.require(0)?;
        let content = reader.require(1)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            role,
            content,
            rest,
            order,
        })
    }
}

wire_object!(Message, [0 => "role": role, 1 => "content": content]);

/// A tool definition: a client tool (`name`, `description`, `input_schema`) or a server tool
/// (`type`, `name`, …). Only the name is typed; the schema's key order is kept because the
/// provider renders it into the prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// The tool's name.
    pub name: String,
    /// Everything else, in order.
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl Tool {
    /// A tool from its name and other fields (`description`, `input_schema`).
    pub fn new(name: impl Into<String>, rest: Map<String, Value>) -> Self {
        Self {
            name: name.into(),
            rest,
            order: KeyOrder::default(),
        }
    }
}

impl FromJson for Tool {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let name = reader.require(0)?;
        let (rest, order) = reader.finish();
        Ok(Self { name, rest, order })
    }
}

wire_object!(Tool, [0 => "name": name]);

wire_serde!(MessagesRequest, Message, Tool);
