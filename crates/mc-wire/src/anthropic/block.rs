//! Content blocks of the Anthropic Messages API.
//!
//! The block types the engine acts on are typed; every other type (`server_tool_use`,
//! `web_search_tool_result`, `container_upload`, types not invented yet) is kept whole as
//! [`ContentBlock::Unknown`]. Fields we do not model (`cache_control`, `citations`, …) stay in
//! each block's `rest` map in their original order.

use serde_json::{Map, Value};

use crate::error::{JsonPath, Result, WireError, type_name};
use crate::object::{FromJson, KeyOrder, ObjectReader, WireObject};
use crate::wire_object::wire_object;

/// One block of a message's content.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// `text`.
    Text(TextBlock),
    /// `image` or `document`.
    Media(MediaBlock),
    /// `tool_use`: the model calls a tool.
    ToolUse(ToolUseBlock),
    /// `tool_result`: the answer to a `tool_use`.
    ToolResult(ToolResultBlock),
    /// `thinking`: signed reasoning.
    Thinking(ThinkingBlock),
    /// `redacted_thinking`: encrypted reasoning.
    RedactedThinking(RedactedThinkingBlock),
    /// Any other block type, kept exactly as it came.
    Unknown(Map<String, Value>),
}

impl ContentBlock {
    /// The block's `type` string.
    pub fn type_name(&self) -> &str {
        match self {
            Self::Text(_) => "text",
            Self::Media(block) => block.kind.type_name(),
            Self::ToolUse(_) => "tool_use",
            Self::ToolResult(_) => "tool_result",
            Self::Thinking(_) => "thinking",
            Self::RedactedThinking(_) => "redacted_thinking",
            Self::Unknown(raw) => raw.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The fields this codec does not model, where `cache_control` lives.
    pub fn rest(&self) -> &Map<String, Value> {
        match self {
            Self::Text(block) => &block.rest,
            Self::Media(block) => &block.rest,
            Self::ToolUse(block) => &block.rest,
            Self::ToolResult(block) => &block.rest,
            Self::Thinking(block) => &block.rest,
            Self::RedactedThinking(block) => &block.rest,
            Self::Unknown(raw) => raw,
        }
    }

    /// Mutable access to the fields this codec does not model.
    pub fn rest_mut(&mut self) -> &mut Map<String, Value> {
        match self {
            Self::Text(block) => &mut block.rest,
            Self::Media(block) => &mut block.rest,
            Self::ToolUse(block) => &mut block.rest,
            Self::ToolResult(block) => &mut block.rest,
            Self::Thinking(block) => &mut block.rest,
            Self::RedactedThinking(block) => &mut block.rest,
            Self::Unknown(raw) => raw,
        }
    }

    /// The block's `cache_control` marker, if it carries one.
    pub fn cache_control(&self) -> Option<&Value> {
        self.rest().get("cache_control")
    }

    /// Sets or clears the `cache_control` marker. Clearing keeps every other key in place.
    pub fn set_cache_control(&mut self, marker: Option<Value>) {
        let rest = self.rest_mut();
        match marker {
            Some(marker) => {
                rest.insert("cache_control".to_owned(), marker);
            }
            None => {
                rest.shift_remove("cache_control");
            }
        }
    }

    /// A text block with `fields` (those of a client's block the engine kept) after its
    /// text, or none.
    pub fn text_with_fields(text: impl Into<String>, fields: Option<Map<String, Value>>) -> Self {
        Self::Text(TextBlock {
            text: text.into(),
            rest: fields.unwrap_or_default(),
            order: KeyOrder::default(),
        })
    }

    /// A text block with no extra fields.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextBlock {
            text: text.into(),
            rest: Map::new(),
            order: KeyOrder::default(),
        })
    }
}

/// A `text` block.
#[derive(Debug, Clone, PartialEq)]
pub struct TextBlock {
    /// The text.
    pub text: String,
    /// Unmodelled fields (`cache_control`, `citations`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

/// Which media block type a [`MediaBlock`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaBlockKind {
    /// `image`.
    Image,
    /// `document`.
    Document,
}

impl MediaBlockKind {
    fn type_name(self) -> &'static str {
        match self {
            Self::Image => "image",
            Self::Document => "document",
        }
    }
}

/// An `image` or `document` block.
#[derive(Debug, Clone, PartialEq)]
pub struct MediaBlock {
    /// Image or document.
    pub kind: MediaBlockKind,
    /// Where the bytes are (`base64`, `url`, `file`, `text`, `content`), kept as sent.
    pub source: Value,
    /// Unmodelled fields (`cache_control`, `title`, `citations`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

/// A `tool_use` block.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUseBlock {
    /// The call id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments; key order is kept because the provider renders them in order.
    pub input: Value,
    /// Unmodelled fields.
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

/// A `tool_result` block.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResultBlock {
    /// The id of the `tool_use` this answers.
    pub tool_use_id: String,
    /// The result: a string or blocks; absent for an empty result.
    pub content: Option<BlockContent>,
    /// Whether the tool failed.
    pub is_error: Option<bool>,
    /// Unmodelled fields.
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

/// A `thinking` block.
#[derive(Debug, Clone, PartialEq)]
pub struct ThinkingBlock {
    /// The reasoning text.
    pub thinking: String,
    /// The provider's signature; altering `thinking` invalidates it.
    pub signature: Option<String>,
    /// Unmodelled fields.
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

/// A `redacted_thinking` block.
#[derive(Debug, Clone, PartialEq)]
pub struct RedactedThinkingBlock {
    /// The encrypted payload.
    pub data: String,
    /// Unmodelled fields.
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

/// Content that is either a bare string or a list of blocks (message content, tool results,
/// the system prompt). The form is kept: a string never comes back as a block list.
#[derive(Debug, Clone, PartialEq)]
pub enum BlockContent {
    /// A bare string.
    Text(String),
    /// A list of blocks.
    Blocks(Vec<ContentBlock>),
}

impl serde::Serialize for BlockContent {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Self::Text(text) => serializer.serialize_str(text),
            Self::Blocks(blocks) => serializer.collect_seq(blocks),
        }
    }
}

impl FromJson for BlockContent {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        match value {
            Value::String(text) => Ok(Self::Text(text)),
            array @ Value::Array(_) => Vec::from_json(array, path).map(Self::Blocks),
            other => Err(WireError::shape(
                path,
                format!(
                    "expected a string or an array of content blocks, found {}",
                    type_name(&other)
                ),
            )),
        }
    }
}

/// The block types this codec types, read off `type` before the object is taken apart.
#[derive(Clone, Copy)]
enum BlockType {
    Text,
    Media(MediaBlockKind),
    ToolUse,
    ToolResult,
    Thinking,
    RedactedThinking,
    Other,
}

impl BlockType {
    fn of(raw: &Map<String, Value>, path: &JsonPath<'_>) -> Result<Self> {
        match raw.get("type") {
            Some(Value::String(kind)) => Ok(match kind.as_str() {
                "text" => Self::Text,
                "image" => Self::Media(MediaBlockKind::Image),
                "document" => Self::Media(MediaBlockKind::Document),
                "tool_use" => Self::ToolUse,
                "tool_result" => Self::ToolResult,
                "thinking" => Self::Thinking,
                "redacted_thinking" => Self::RedactedThinking,
                _ => Self::Other,
            }),
            Some(other) => Err(WireError::shape(
                &path.key("type"),
                format!("expected a string, found {}", type_name(other)),
            )),
            None => Err(WireError::shape(path, "missing required field `type`")),
        }
    }
}

impl FromJson for ContentBlock {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let Value::Object(raw) = value else {
            return Err(WireError::shape(
                path,
                format!(
                    "expected a content block object, found {}",
                    type_name(&value)
                ),
            ));
        };
        Ok(match BlockType::of(&raw, path)? {
            BlockType::Text => {
                let mut reader = ObjectReader::new(raw, path, TextBlock::FIELDS);
                let text = reader.require(1)?;
                let (rest, order) = reader.finish();
                Self::Text(TextBlock { text, rest, order })
            }
            BlockType::Media(kind) => {
                let mut reader = ObjectReader::new(raw, path, MediaBlock::FIELDS);
                let source = reader.require(1)?;
                let (rest, order) = reader.finish();
                Self::Media(MediaBlock {
                    kind,
                    source,
                    rest,
                    order,
                })
            }
            BlockType::ToolUse => {
                let mut reader = ObjectReader::new(raw, path, ToolUseBlock::FIELDS);
                let id = reader.require(1)?;
                let name = reader.require(2)?;
                let input = reader.require(3)?;
                let (rest, order) = reader.finish();
                Self::ToolUse(ToolUseBlock {
                    id,
                    name,
                    input,
                    rest,
                    order,
                })
            }
            BlockType::ToolResult => {
                let mut reader = ObjectReader::new(raw, path, ToolResultBlock::FIELDS);
                let tool_use_id = reader.require(1)?;
                let content = reader.take(2)?;
                let is_error = reader.take(3)?;
                let (rest, order) = reader.finish();
                Self::ToolResult(ToolResultBlock {
                    tool_use_id,
                    content,
                    is_error,
                    rest,
                    order,
                })
            }
            BlockType::Thinking => {
                let mut reader = ObjectReader::new(raw, path, ThinkingBlock::FIELDS);
                let thinking = reader.require(1)?;
                let signature = reader.take(2)?;
                let (rest, order) = reader.finish();
                Self::Thinking(ThinkingBlock {
                    thinking,
                    signature,
                    rest,
                    order,
                })
            }
            BlockType::RedactedThinking => {
                let mut reader = ObjectReader::new(raw, path, RedactedThinkingBlock::FIELDS);
                let data = reader.require(1)?;
                let (rest, order) = reader.finish();
                Self::RedactedThinking(RedactedThinkingBlock { data, rest, order })
            }
            BlockType::Other => Self::Unknown(raw),
        })
    }
}

impl serde::Serialize for ContentBlock {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use crate::object::serialize_object;
        match self {
            Self::Text(block) => serialize_object(block, serializer),
            Self::Media(block) => serialize_object(block, serializer),
            Self::ToolUse(block) => serialize_object(block, serializer),
            Self::ToolResult(block) => serialize_object(block, serializer),
            Self::Thinking(block) => serialize_object(block, serializer),
            Self::RedactedThinking(block) => serialize_object(block, serializer),
            Self::Unknown(raw) => raw.serialize(serializer),
        }
    }
}

impl<'de> serde::Deserialize<'de> for ContentBlock {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let value = <Value as serde::Deserialize>::deserialize(deserializer)?;
        Self::from_json(value, &JsonPath::Root).map_err(<D::Error as serde::de::Error>::custom)
    }
}

wire_object!(TextBlock, type = "text", [1 => "text": text]);
wire_object!(MediaBlock, type_from = MediaBlock::type_name, [1 => "source": source]);
wire_object!(ToolUseBlock, type = "tool_use", [1 => "id": id, 2 => "name": name, 3 => "input": input]);
wire_object!(ToolResultBlock, type = "tool_result",
    [1 => "tool_use_id": tool_use_id, 2 => "content": content as optional, 3 => "is_error": is_error as optional]
);
wire_object!(ThinkingBlock, type = "thinking",
    [1 => "thinking": thinking, 2 => "signature": signature as optional]
);
wire_object!(RedactedThinkingBlock, type = "redacted_thinking", [1 => "data": data]);

impl MediaBlock {
    /// The block's `type` string.
    pub fn type_name(&self) -> &'static str {
        self.kind.type_name()
    }

    /// A media block with no extra fields.
    pub fn new(kind: MediaBlockKind, source: Value) -> Self {
        Self {
            kind,
            source,
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }
}

impl ToolUseBlock {
    /// A tool call with no extra fields.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input,
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }
}

impl ToolResultBlock {
    /// A tool result with no extra fields; `is_error` is written only when true.
    pub fn new(
        tool_use_id: impl Into<String>,
        content: Option<BlockContent>,
        is_error: bool,
    ) -> Self {
        Self {
            tool_use_id: tool_use_id.into(),
            content,
            is_error: is_error.then_some(true),
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }
}

impl ThinkingBlock {
    /// A thinking block with no extra fields.
    pub fn new(thinking: impl Into<String>, signature: Option<String>) -> Self {
        Self {
            thinking: thinking.into(),
            signature,
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }
}

impl RedactedThinkingBlock {
    /// A redacted thinking block with no extra fields.
    pub fn new(data: impl Into<String>) -> Self {
        Self {
            data: data.into(),
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }
}
