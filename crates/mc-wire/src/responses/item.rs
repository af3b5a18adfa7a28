//! The items a Responses conversation is made of: `input[]` in a request, `output[]` in a
//! response.
//!
//! Typed are the items the engine maps to the neutral model: messages, function calls and
//! their outputs, custom tool calls and their outputs, and reasoning (whose
//! `encrypted_content` only the provider can read, so it always travels whole). Any other
//! item (`compaction`, `item_reference`, `web_search_call`, types OpenAI adds later) is kept
//! exactly as it came in [`Item::Other`].
//!
//! A message may come without `type` (the "easy" form `{"role": "user", "content": "hi"}`);
//! it then goes back out without one.

use serde_json::{Map, Value};

use super::content::Content;
use crate::error::{JsonPath, Result, WireError, type_name};
use crate::object::{FromJson, KeyOrder, ObjectReader, WireObject, adopt_fields, serialize_object};
use crate::wire_object::wire_object;

/// One item of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A `message` from the user, the model, or the instructions.
    Message(MessageItem),
    /// `function_call`: the model calling a function tool.
    FunctionCall(FunctionCallItem),
    /// `custom_tool_call`: the model calling a free-form (`custom`) tool.
    CustomToolCall(CustomToolCallItem),
    /// `function_call_output` or `custom_tool_call_output`: a tool's answer.
    ToolOutput(ToolOutputItem),
    /// `reasoning`: the model's reasoning, summarised and encrypted.
    Reasoning(ReasoningItem),
    /// Any other item, kept exactly as it came.
    Other(Map<String, Value>),
}

impl Item {
    /// Whether it is an instruction when it leads the input: a `system` or `developer`
    /// message.
    pub fn is_instruction(&self) -> bool {
        matches!(self, Self::Message(message)
            if matches!(message.role, MessageRole::System | MessageRole::Developer))
    }

    /// Decodes one item on its own, as a request's `input` list holds it (a follow-up
    /// request is decoded by its new items only); an error names the item's own paths.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        Self::from_json(
            crate::object::parse_body(bytes, usize::MAX)?,
            &JsonPath::Root,
        )
    }

    /// The item's `type` (`message` for a message sent without one).
    pub fn type_name(&self) -> &str {
        match self {
            Self::Message(_) => "message",
            Self::FunctionCall(_) => "function_call",
            Self::CustomToolCall(_) => "custom_tool_call",
            Self::ToolOutput(item) => item.kind.as_str(),
            Self::Reasoning(_) => "reasoning",
            Self::Other(raw) => raw.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The item as a JSON object, in its key order.
    pub fn to_object(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(object)) => object,
            _ => Map::new(),
        }
    }
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageRole {
    /// `user`.
    User,
    /// `assistant`: the model.
    Assistant,
    /// `system`: instructions.
    System,
    /// `developer`: instructions, under the name reasoning models use.
    Developer,
}

impl MessageRole {
    /// Every role, in the order error messages list them.
    pub const ALL: [Self; 4] = [Self::User, Self::Assistant, Self::System, Self::Developer];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::System => "system",
            Self::Developer => "developer",
        }
    }
}

impl FromJson for MessageRole {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let Some(name) = value.as_str() else {
            return Err(WireError::shape(
                path,
                format!("expected a role string, found {}", type_name(&value)),
            ));
        };
        Self::ALL
            .into_iter()
            .find(|role| role.as_str() == name)
            .ok_or_else(|| {
                WireError::shape(
                    path,
                    format!(
                        "unknown role `{name}`: expected `user`, `assistant`, `system` or `developer`"
                    ),
                )
            })
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

/// A `message` item.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageItem {
    /// `type`: `Some("message")`, or `None` for a message sent without one.
    pub kind: Option<String>,
    /// Who wrote it.
    pub role: MessageRole,
    /// A string or parts, in the form the client sent.
    pub content: Content,
    /// Unmodelled fields (`id`, `status`, `phase`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl MessageItem {
    /// A `{"type": "message", role, content}` item with no other fields.
    pub fn new(role: MessageRole, content: Content) -> Self {
        Self {
            kind: Some("message".to_owned()),
            role,
            content,
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }
}

/// A `function_call` item.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionCallItem {
    /// The id its output names.
    pub call_id: String,
    /// The function called.
    pub name: String,
    /// The arguments as the model wrote them (JSON in a string, possibly invalid), kept as a
    /// string so a round trip never reformats them.
    pub arguments: String,
    /// Unmodelled fields (`id`, `status`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl FunctionCallItem {
    /// A call with no other fields.
    pub fn new(
        call_id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            name: name.into(),
            arguments: arguments.into(),
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }
}

/// A `custom_tool_call` item: a call whose input is free text (a patch, a grammar's output).
#[derive(Debug, Clone, PartialEq)]
pub struct CustomToolCallItem {
    /// The id its output names.
    pub call_id: String,
    /// The tool called.
    pub name: String,
    /// The input, as written.
    pub input: String,
    /// Unmodelled fields (`id`, `status`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl CustomToolCallItem {
    /// A call with no other fields.
    pub fn new(
        call_id: impl Into<String>,
        name: impl Into<String>,
        input: impl Into<String>,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            name: name.into(),
            input: input.into(),
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }
}

/// Which kind of call a [`ToolOutputItem`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    /// `function_call_output`.
    Function,
    /// `custom_tool_call_output`.
    Custom,
}

impl OutputKind {
    /// The item's `type`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Function => "function_call_output",
            Self::Custom => "custom_tool_call_output",
        }
    }
}

/// A tool's answer to one call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutputItem {
    /// Function or custom.
    pub kind: OutputKind,
    /// The call it answers.
    pub call_id: String,
    /// A string, or parts (text, images, files).
    pub output: Content,
    /// Unmodelled fields (`id`, `status`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl ToolOutputItem {
    /// An output with no other fields.
    pub fn new(kind: OutputKind, call_id: impl Into<String>, output: Content) -> Self {
        Self {
            kind,
            call_id: call_id.into(),
            output,
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }
}

impl Item {
    /// Gives this item, as the engine rendered it, the unmodelled fields (`id`, `status`,
    /// harness fields) and key order of `client`, the same item as the client sent it: a
    /// call or output of the same kind and call id, or a message of the same role (the
    /// caller knows it is the same message; its text parts keep their `annotations` and
    /// other fields when the parts line up). Else nothing changes. Returns whether it did.
    pub fn adopt_client_fields(&mut self, client: &Item) -> bool {
        match (self, client) {
            (Self::Message(ours), Self::Message(theirs)) if ours.role == theirs.role => {
                adopt_fields(&mut ours.rest, &mut ours.order, &theirs.rest, &theirs.order);
                if let (Content::Parts(our_parts), Content::Parts(their_parts)) =
                    (&mut ours.content, &theirs.content)
                    && our_parts.len() == their_parts.len()
                {
                    for (our_part, their_part) in our_parts.iter_mut().zip(their_parts) {
                        our_part.adopt_client_fields(their_part);
                    }
                }
                true
            }
            (Self::FunctionCall(ours), Self::FunctionCall(theirs))
                if ours.call_id == theirs.call_id =>
            {
                adopt_fields(&mut ours.rest, &mut ours.order, &theirs.rest, &theirs.order);
                true
            }
            (Self::CustomToolCall(ours), Self::CustomToolCall(theirs))
                if ours.call_id == theirs.call_id =>
            {
                adopt_fields(&mut ours.rest, &mut ours.order, &theirs.rest, &theirs.order);
                true
            }
            (Self::ToolOutput(ours), Self::ToolOutput(theirs))
                if ours.call_id == theirs.call_id && ours.kind == theirs.kind =>
            {
                adopt_fields(&mut ours.rest, &mut ours.order, &theirs.rest, &theirs.order);
                true
            }
            _ => false,
        }
    }

    /// The call id of a call or output item.
    pub fn call_id(&self) -> Option<&str> {
        match self {
            Self::FunctionCall(item) => Some(&item.call_id),
            Self::CustomToolCall(item) => Some(&item.call_id),
            Self::ToolOutput(item) => Some(&item.call_id),
            Self::Message(_) | Self::Reasoning(_) | Self::Other(_) => None,
        }
    }
}

/// A `reasoning` item.
#[derive(Debug, Clone, PartialEq)]
pub struct ReasoningItem {
    /// The reasoning, encrypted for the provider (with `include:
    /// ["reasoning.encrypted_content"]`); opaque to everyone else.
    pub encrypted_content: Option<String>,
    /// Unmodelled fields (`id`, `summary`, `content`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

/// The typed item kinds, read off `type` (or `role`) before the object is taken apart.
enum ItemType {
    Message,
    FunctionCall,
    CustomToolCall,
    Output(OutputKind),
    Reasoning,
    Other,
}

fn item_type(raw: &Map<String, Value>, path: &JsonPath<'_>) -> Result<ItemType> {
    match raw.get("type") {
        Some(Value::String(kind)) => Ok(match kind.as_str() {
            "message" => ItemType::Message,
            "function_call" => ItemType::FunctionCall,
            "custom_tool_call" => ItemType::CustomToolCall,
            "function_call_output" => ItemType::Output(OutputKind::Function),
            "custom_tool_call_output" => ItemType::Output(OutputKind::Custom),
            "reasoning" => ItemType::Reasoning,
            _ => ItemType::Other,
        }),
        Some(other) => Err(WireError::shape(
            &path.key("type"),
            format!("expected a string, found {}", type_name(other)),
        )),
        None if raw.contains_key("role") => Ok(ItemType::Message),
        None => Err(WireError::shape(
            path,
            "missing required field `type` (an item without one must be a message with a `role`)",
        )),
    }
}

impl FromJson for Item {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let Value::Object(raw) = value else {
            return Err(WireError::shape(
                path,
                format!("expected an item object, found {}", type_name(&value)),
            ));
        };
        Ok(match item_type(&raw, path)? {
            ItemType::Message => {
                let mut reader = ObjectReader::new(raw, path, MessageItem::FIELDS);
                let kind = reader.take(0)?;
                let role = reader.require(1)?;
                let content = reader.require(2)?;
                let (rest, order) = reader.finish();
                Self::Message(MessageItem {
                    kind,
                    role,
                    content,
                    rest,
                    order,
                })
            }
            ItemType::FunctionCall => {
                let mut reader = ObjectReader::new(raw, path, FunctionCallItem::FIELDS);
                let call_id = reader.require(1)?;
                let name = reader.require(2)?;
                let arguments = reader.require(3)?;
                let (rest, order) = reader.finish();
                Self::FunctionCall(FunctionCallItem {
                    call_id,
                    name,
                    arguments,
                    rest,
                    order,
                })
            }
            ItemType::CustomToolCall => {
                let mut reader = ObjectReader::new(raw, path, CustomToolCallItem::FIELDS);
                let call_id = reader.require(1)?;
                let name = reader.require(2)?;
                let input = reader.require(3)?;
                let (rest, order) = reader.finish();
                Self::CustomToolCall(CustomToolCallItem {
                    call_id,
                    name,
                    input,
                    rest,
                    order,
                })
            }
            ItemType::Output(kind) => {
                let mut reader = ObjectReader::new(raw, path, ToolOutputItem::FIELDS);
                let call_id = reader.require(1)?;
                let output = reader.require(2)?;
                let (rest, order) = reader.finish();
                Self::ToolOutput(ToolOutputItem {
                    kind,
                    call_id,
                    output,
                    rest,
                    order,
                })
            }
            ItemType::Reasoning => {
                let mut reader = ObjectReader::new(raw, path, ReasoningItem::FIELDS);
                let encrypted_content = reader.take(1)?;
                let (rest, order) = reader.finish();
                Self::Reasoning(ReasoningItem {
                    encrypted_content,
                    rest,
                    order,
                })
            }
            ItemType::Other => Self::Other(raw),
        })
    }
}

impl serde::Serialize for Item {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Self::Message(item) => serialize_object(item, serializer),
            Self::FunctionCall(item) => serialize_object(item, serializer),
            Self::CustomToolCall(item) => serialize_object(item, serializer),
            Self::ToolOutput(item) => serialize_object(item, serializer),
            Self::Reasoning(item) => serialize_object(item, serializer),
            Self::Other(raw) => raw.serialize(serializer),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Item {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let value = <Value as serde::Deserialize>::deserialize(deserializer)?;
        Self::from_json(value, &JsonPath::Root).map_err(<D::Error as serde::de::Error>::custom)
    }
}

wire_object!(
    MessageItem,
    [0 => "type": kind as optional, 1 => "role": role, 2 => "content": content]
);
wire_object!(
    FunctionCallItem,
    type = "function_call",
    [1 => "call_id": call_id, 2 => "name": name, 3 => "arguments": arguments]
);
wire_object!(
    CustomToolCallItem,
    type = "custom_tool_call",
    [1 => "call_id": call_id, 2 => "name": name, 3 => "input": input]
);
wire_object!(
    ToolOutputItem,
    type_from = |item: &ToolOutputItem| item.kind.as_str(),
    [1 => "call_id": call_id, 2 => "output": output]
);
wire_object!(
    ReasoningItem,
    type = "reasoning",
    [1 => "encrypted_content": encrypted_content as optional]
);
