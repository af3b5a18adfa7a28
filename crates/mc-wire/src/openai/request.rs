//! The Chat Completions request (`POST /v1/chat/completions`).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::message::ChatMessage;
use super::part::ChatContent;
use crate::error::{JsonPath, Result, WireError, type_name};
use crate::object::{
    FromJson, KeyOrder, ObjectReader, WireObject, encode_json, encode_with_raw_field, parse_body,
    wire_serde,
};
use crate::wire_object::wire_object;

/// A Chat Completions request body.
///
/// Typed where the engine reads or rewrites; everything else (`temperature`,
/// `max_completion_tokens`, `tool_choice`, `stream_options`, `response_format`, future fields)
/// rides in `rest` and goes back out unchanged, in its original position.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The model name.
    pub model: String,
    /// The conversation, system and developer messages included.
    pub messages: Vec<ChatMessage>,
    /// Tool definitions.
    pub tools: Option<Vec<ChatTool>>,
    /// Whether the client asked for an SSE stream.
    pub stream: Option<bool>,
    /// Unmodelled fields.
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl ChatRequest {
    /// How many leading messages are instructions.
    pub fn instruction_count(&self) -> usize {
        self.messages
            .iter()
            .take_while(|message| message.is_instruction())
            .count()
    }

    /// The texts of its instructions (where a client states its environment).
    pub fn instruction_texts(&self) -> Vec<&str> {
        self.messages[..self.instruction_count()]
            .iter()
            .filter_map(|message| match message.content.as_ref()? {
                ChatContent::Text(text) => Some(text.as_str()),
                ChatContent::Parts(_) => None,
            })
            .collect()
    }

    /// The names of the tools it offers the model.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().flatten().filter_map(ChatTool::name)
    }

    /// Whether it offers the model any tool (an empty list offers none).
    pub fn has_tools(&self) -> bool {
        self.tools.as_ref().is_some_and(|tools| !tools.is_empty())
    }

    /// A request with no tools and no extra fields.
    pub fn new(model: impl Into<String>, messages: Vec<ChatMessage>) -> Self {
        Self {
            model: model.into(),
            messages,
            tools: None,
            stream: None,
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }

    /// Decodes a request body no larger than `limit_bytes`.
    pub fn decode(body: &[u8], limit_bytes: usize) -> Result<Self> {
        Self::from_json(parse_body(body, limit_bytes)?, &JsonPath::Root)
    }

    /// Encodes the request; a pure function of its value.
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }

    /// Encodes the request as [`Self::encode`] would with `messages_json` as its message
    /// list (`[` … `]`, compact, as serde_json writes it), which the caller may have
    /// assembled from messages it encoded before. The request's own `messages` are not
    /// written.
    pub fn encode_with_messages(&self, messages_json: &[u8]) -> Vec<u8> {
        encode_with_raw_field(self, MESSAGES_FIELD, messages_json).0
    }

    /// The bytes before and after the message list, so that `before + list + after` is what
    /// [`Self::encode_with_messages`] writes for that list: the rest of a request encoded
    /// once for requests that differ only in their messages.
    pub fn encode_around_messages(&self) -> (Vec<u8>, Vec<u8>) {
        let (mut before, at) = encode_with_raw_field(self, MESSAGES_FIELD, &[]);
        let after = before.split_off(at.unwrap_or(before.len()));
        (before, after)
    }

    /// Whether the response will be streamed.
    pub fn is_stream(&self) -> bool {
        self.stream == Some(true)
    }

    /// `stream_options.include_usage`: whether a stream ends with a chunk carrying usage.
    ///
    /// Without it OpenAI streams carry no token counts at all, so the proxy must know
    /// whether to ask for them (and then hide the extra chunk from a client that did not).
    pub fn includes_stream_usage(&self) -> bool {
        self.rest
            .get("stream_options")
            .and_then(|options| options.get("include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// Sets `stream_options.include_usage`, keeping `stream_options` and its other keys where
    /// they are, so asking for usage changes no other byte of the body.
    pub fn set_stream_usage(&mut self, include: bool) {
        let flag = Value::Bool(include);
        match self.rest.get_mut("stream_options") {
            Some(Value::Object(options)) => {
                options.insert("include_usage".to_owned(), flag);
            }
            Some(other) => {
                let mut options = Map::new();
                options.insert("include_usage".to_owned(), flag);
                *other = Value::Object(options);
            }
            None => {
                let mut options = Map::new();
                options.insert("include_usage".to_owned(), flag);
                self.rest
                    .insert("stream_options".to_owned(), Value::Object(options));
            }
        }
    }
}

impl FromJson for ChatRequest {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let model = reader.require(0)?;
        let messages = reader.require(1)?;
        let tools = reader.take(2)?;
        let stream = reader.take(3)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            model,
            messages,
            tools,
            stream,
            rest,
            order,
        })
    }
}

/// Where `messages` is among [`ChatRequest`]'s fields.
const MESSAGES_FIELD: usize = 1;

wire_object!(
    ChatRequest,
    [
        0 => "model": model,
        1 => "messages": messages,
        2 => "tools": tools as optional,
        3 => "stream": stream as optional,
    ]
);

/// A tool definition: `{"type": "function", "function": {name, description, parameters,
/// strict}}`, or a `custom` tool.
///
/// Kept whole, because the provider renders the schema into the prompt key by key and any
/// change to it moves the cached prefix; the engine only needs the name. Shared: a follow-up
/// repeats its tools, and a request made from a remembered one takes them with a count
/// (copying and then dropping every schema was a tenth of a Chat pass's time).
#[derive(Debug, Clone, PartialEq)]
pub struct ChatTool {
    /// The definition, in its original key order.
    pub raw: Arc<Map<String, Value>>,
}

impl ChatTool {
    /// The tool's `type` (`function`, `custom`).
    pub fn kind(&self) -> Option<&str> {
        self.raw.get("type")?.as_str()
    }

    /// The tool's name, read from the object named by its type (`function.name`,
    /// `custom.name`), or from `function` when the type is missing.
    pub fn name(&self) -> Option<&str> {
        let holder = self.kind().unwrap_or("function");
        self.raw.get(holder)?.get("name")?.as_str()
    }
}

impl FromJson for ChatTool {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        match value {
            Value::Object(raw) => Ok(Self { raw: Arc::new(raw) }),
            other => Err(WireError::shape(
                path,
                format!("expected a tool object, found {}", type_name(&other)),
            )),
        }
    }
}

impl serde::Serialize for ChatTool {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        self.raw.serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for ChatTool {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let value = <Value as serde::Deserialize>::deserialize(deserializer)?;
        Self::from_json(value, &JsonPath::Root).map_err(<D::Error as serde::de::Error>::custom)
    }
}

wire_serde!(ChatRequest);
