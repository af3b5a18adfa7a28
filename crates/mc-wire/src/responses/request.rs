//! The Responses request (`POST /v1/responses`).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::content::{Content, ContentPart};
use super::item::Item;
use crate::error::{JsonPath, Result, WireError, type_name};
use crate::object::{
    FromJson, KeyOrder, ObjectReader, WireObject, encode_json, encode_with_raw_field, parse_body,
    wire_serde,
};
use crate::wire_object::wire_object;

/// `input`: a bare string (one user message) or a list of items. The form is kept.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A bare string.
    Text(String),
    /// The conversation's items.
    Items(Vec<Item>),
}

impl serde::Serialize for Input {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Self::Text(text) => serializer.serialize_str(text),
            Self::Items(items) => serializer.collect_seq(items),
        }
    }
}

impl FromJson for Input {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        match value {
            Value::String(text) => Ok(Self::Text(text)),
            array @ Value::Array(_) => Vec::from_json(array, path).map(Self::Items),
            other => Err(WireError::shape(
                path,
                format!(
                    "expected a string or an array of items, found {}",
                    type_name(&other)
                ),
            )),
        }
    }
}

/// A Responses request body.
///
/// Typed where the engine reads or rewrites; everything else (`instructions`, `store`,
/// `include`, `reasoning`, `prompt_cache_key`, `client_metadata`, future fields) rides in
/// `rest` and goes back out unchanged, in its original position.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponsesRequest {
    /// The model name.
    pub model: String,
    /// The conversation; absent when a stored response or prompt supplies it.
    pub input: Option<Input>,
    /// Tool definitions.
    pub tools: Option<Vec<ResponsesTool>>,
    /// Whether the client asked for an SSE stream.
    pub stream: Option<bool>,
    /// Unmodelled fields.
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl ResponsesRequest {
    /// How many leading items are instructions (none in a bare string input).
    pub fn instruction_count(&self) -> usize {
        match &self.input {
            Some(Input::Items(items)) => items
                .iter()
                .take_while(|item| item.is_instruction())
                .count(),
            Some(Input::Text(_)) | None => 0,
        }
    }

    /// The texts of its instructions (where a client states its environment): the
    /// `instructions` field, then the leading items' texts.
    pub fn instruction_texts(&self) -> Vec<&str> {
        let mut texts: Vec<&str> = self.instructions().into_iter().collect();
        let items = match &self.input {
            Some(Input::Items(items)) => &items[..self.instruction_count()],
            Some(Input::Text(_)) | None => &[],
        };
        for item in items {
            let Item::Message(message) = item else {
                continue;
            };
            match &message.content {
                Content::Text(text) => texts.push(text),
                Content::Parts(parts) => texts.extend(parts.iter().filter_map(|part| match part {
                    ContentPart::Text(part) => Some(part.text.as_str()),
                    ContentPart::Refusal(_) | ContentPart::Other(_) => None,
                })),
            }
        }
        texts
    }

    /// The names of the tools it offers the model: each tool's own, and those of the tools
    /// inside a `namespace` (as Codex offers MCP tools).
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().flatten().flat_map(ResponsesTool::names)
    }

    /// Whether it offers the model any tool (an empty list offers none).
    pub fn has_tools(&self) -> bool {
        self.tools.as_ref().is_some_and(|tools| !tools.is_empty())
    }

    /// A request with no tools and no extra fields.
    pub fn new(model: impl Into<String>, input: Input) -> Self {
        Self {
            model: model.into(),
            input: Some(input),
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

    /// The bytes before and after the `input` list, so that `before + list + after` is what
    /// [`Self::encode`] writes with that list (`[` … `]`, compact, as serde_json writes it)
    /// as its items: the rest of a request encoded once around items encoded before.
    pub fn encode_around_input(&self) -> (Vec<u8>, Vec<u8>) {
        let (mut before, at) = encode_with_raw_field(self, INPUT_FIELD, &[]);
        let after = before.split_off(at.unwrap_or(before.len()));
        (before, after)
    }

    /// Whether the response will be streamed.
    pub fn is_stream(&self) -> bool {
        self.stream == Some(true)
    }

    /// `instructions`, when a string.
    pub fn instructions(&self) -> Option<&str> {
        self.rest.get("instructions")?.as_str()
    }

    /// `prompt_cache_key`: the key OpenAI routes the prompt cache on (clients send their
    /// session id).
    pub fn prompt_cache_key(&self) -> Option<&str> {
        self.rest.get("prompt_cache_key")?.as_str()
    }

    /// `previous_response_id`, when set.
    pub fn previous_response_id(&self) -> Option<&str> {
        self.rest.get("previous_response_id")?.as_str()
    }

    /// What makes the request depend on history stored at the provider, if anything: a
    /// `previous_response_id`, a `conversation`, or an `item_reference` item. Such a request
    /// does not carry its whole conversation, so it cannot be rewritten.
    pub fn stateful_reason(&self) -> Option<&'static str> {
        let set = |key: &str| self.rest.get(key).is_some_and(|value| !value.is_null());
        if set("previous_response_id") {
            return Some("previous_response_id");
        }
        if set("conversation") {
            return Some("conversation");
        }
        let references = match &self.input {
            Some(Input::Items(items)) => items
                .iter()
                .any(|item| item.type_name() == "item_reference"),
            Some(Input::Text(_)) | None => false,
        };
        references.then_some("item_reference")
    }
}

impl FromJson for ResponsesRequest {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let model = reader.require(0)?;
        let input = reader.take(1)?;
        let tools = reader.take(2)?;
        let stream = reader.take(3)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            model,
            input,
            tools,
            stream,
            rest,
            order,
        })
    }
}

wire_object!(
    ResponsesRequest,
    [
        0 => "model": model,
        1 => "input": input as optional,
        2 => "tools": tools as optional,
        3 => "stream": stream as optional,
    ]
);

/// A tool definition: `{"type": "function", "name", "parameters", …}`, `{"type":
/// "custom", "name", "format"}`, or a hosted tool (`web_search`, `tool_search`).
///
/// Kept whole: the provider renders it into the prompt key by key. Shared: a follow-up
/// request repeats its tools, and a request made from a remembered one takes them with a
/// count (copying every tool's schema was a cost on every call of a long session).
#[derive(Debug, Clone, PartialEq)]
pub struct ResponsesTool {
    /// The definition, in its original key order.
    pub raw: Arc<Map<String, Value>>,
}

impl ResponsesTool {
    /// The tool's `type`.
    pub fn kind(&self) -> Option<&str> {
        self.raw.get("type")?.as_str()
    }

    /// The tool's name (hosted tools have none).
    pub fn name(&self) -> Option<&str> {
        self.raw.get("name")?.as_str()
    }

    /// The names it offers: its own, and those of the tools inside a `namespace`.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let inner = self.raw.get("tools").and_then(Value::as_array);
        self.name().into_iter().chain(
            inner
                .into_iter()
                .flatten()
                .filter_map(|inner| inner.get("name").and_then(Value::as_str)),
        )
    }

    /// Whether the model calls it with free text (`custom_tool_call`) rather than JSON.
    pub fn is_custom(&self) -> bool {
        self.kind() == Some("custom")
    }
}

impl FromJson for ResponsesTool {
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

impl serde::Serialize for ResponsesTool {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        self.raw.serialize(serializer)
    }
}

wire_serde!(ResponsesRequest);

/// Where `input` is among [`ResponsesRequest`]'s fields.
const INPUT_FIELD: usize = 1;
