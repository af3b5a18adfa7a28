//! One message of a Chat Completions conversation, and the roles that may write it.
//!
//! The message is also the `message` of a non-streaming response, so it carries what both
//! directions need typed: content, tool calls and the id of the call a `tool` message
//! answers. Everything else (`name`, `refusal`, `reasoning`, `audio`, harness fields such as
//! mini-swe-agent's `extra`) rides in `rest`.
//!
//! An assistant message that only calls tools is sent with `"content": null`. The null is kept
//! in `rest` under `content` and [`ChatMessage::content`] reads `None`, so the message goes
//! back out with the null in place.

use serde_json::{Map, Value};

use super::part::ChatContent;
use super::tool_call::ToolCall;
use crate::error::{JsonPath, Result, WireError, type_name};
use crate::object::{
    FromJson, KeyOrder, ObjectReader, WireObject, adopt_fields, parse_body, wire_serde,
};
use crate::wire_object::wire_object;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChatRole {
    /// `system`: instructions from the client.
    System,
    /// `developer`: `system` under its name for reasoning models.
    Developer,
    /// `user`.
    User,
    /// `assistant`: the model.
    Assistant,
    /// `tool`: a tool's answer to one call, named by `tool_call_id`.
    Tool,
    /// `function`: the legacy tool answer, paired with its call by `name`.
    Function,
}

impl ChatRole {
    /// Every role, in the order error messages list them.
    pub const ALL: [Self; 6] = [
        Self::System,
        Self::Developer,
        Self::User,
        Self::Assistant,
        Self::Tool,
        Self::Function,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::Developer => "developer",
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
            Self::Function => "function",
        }
    }

    /// Parses a wire name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|role| role.as_str() == name)
    }
}

impl FromJson for ChatRole {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        match value.as_str() {
            Some(name) => Self::from_name(name).ok_or_else(|| {
                WireError::shape(
                    path,
                    format!(
                        "unknown role `{name}`: expected `system`, `developer`, `user`, `assistant`, `tool` or `function`"
                    ),
                )
            }),
            None => Err(WireError::shape(path, format!("expected a role string, found {}", type_name(&value)))),
        }
    }
}

impl serde::Serialize for ChatRole {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatMessage {
    /// Who wrote it.
    pub role: ChatRole,
    /// A string or parts, in the form the client sent; `None` when absent or `null`.
    pub content: Option<ChatContent>,
    /// The calls an assistant message makes.
    pub tool_calls: Option<Vec<ToolCall>>,
    /// The call a `tool` message answers.
    pub tool_call_id: Option<String>,
    /// Unmodelled fields (`name`, `refusal`, `reasoning`, a `null` content, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl ChatMessage {
    /// Whether it is written as an instruction (a `system` or `developer` message).
    pub fn is_instruction(&self) -> bool {
        matches!(self.role, ChatRole::System | ChatRole::Developer)
    }

    /// A message with no tool fields and no extra fields.
    pub fn new(role: ChatRole, content: Option<ChatContent>) -> Self {
        Self {
            role,
            content,
            tool_calls: None,
            tool_call_id: None,
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }

    /// Decodes one message on its own, as a request's message list holds it (a follow-up
    /// request is decoded by its new messages only); an error names the message's own paths.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        Self::from_json(parse_body(bytes, usize::MAX)?, &JsonPath::Root)
    }

    /// A message whose content is a bare string.
    pub fn text(role: ChatRole, text: impl Into<String>) -> Self {
        Self::new(role, Some(ChatContent::Text(text.into())))
    }

    /// A `tool` message answering `tool_call_id`.
    pub fn tool_result(tool_call_id: impl Into<String>, content: ChatContent) -> Self {
        Self {
            tool_call_id: Some(tool_call_id.into()),
            ..Self::new(ChatRole::Tool, Some(content))
        }
    }

    /// Sends an absent `content` as `"content": null`, in its place: how OpenAI writes a
    /// message of tool calls only, and how the OpenAI SDKs' clients send it back.
    pub fn set_null_content(&mut self) {
        self.order.mark_null(1, Self::FIELDS.len());
    }

    /// The visible reasoning an assistant message carries, with the key it came under:
    /// OpenRouter writes `reasoning`, DeepSeek and vLLM write `reasoning_content`.
    pub fn reasoning(&self) -> Option<(&'static str, &str)> {
        reasoning_in(&self.rest)
    }

    /// Gives this message, as the engine rendered it, the fields the client sent on it
    /// (`name`, `refusal`, `annotations`, harness fields), in the client's key order, its
    /// content's form (a list of one text part stays a list) and its parts' and calls'
    /// fields; visible reasoning goes back under the client's key. The caller knows `client`
    /// is the same message. The engine's own values (a tag in the text) still win.
    pub fn adopt_client_fields(&mut self, client: &ChatMessage) {
        if let Some((key, _)) = reasoning_in(&client.rest)
            && let Some(reasoning) = self.rest.remove(REASONING_KEYS[0])
        {
            self.rest.insert(key.to_owned(), reasoning);
        }
        adopt_fields(&mut self.rest, &mut self.order, &client.rest, &client.order);
        if let Some(content) = &mut self.content
            && let Some(theirs) = &client.content
        {
            content.adopt_client_form(theirs);
        }
        if let (Some(ours), Some(theirs)) = (&mut self.tool_calls, &client.tool_calls) {
            for call in ours {
                if let Some(their_call) = theirs.iter().find(|their| their.id == call.id) {
                    call.adopt_client_fields(their_call);
                }
            }
        }
    }

    /// The `name` field: the author's name, or the function a legacy `function` message
    /// answers.
    pub fn name(&self) -> Option<&str> {
        self.rest.get("name")?.as_str()
    }
}

/// The keys under which providers put visible reasoning, most common first.
pub(super) const REASONING_KEYS: [&str; 2] = ["reasoning", "reasoning_content"];

/// Finds visible reasoning text in an unmodelled-fields map.
pub(super) fn reasoning_in(rest: &Map<String, Value>) -> Option<(&'static str, &str)> {
    REASONING_KEYS
        .into_iter()
        .find_map(|key| Some((key, rest.get(key)?.as_str()?)))
}

impl FromJson for ChatMessage {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let role = reader.require(0)?;
        let content = reader.take(1)?;
        let tool_calls = reader.take(2)?;
        let tool_call_id = reader.take(3)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            role,
            content,
            tool_calls,
            tool_call_id,
            rest,
            order,
        })
    }
}

wire_object!(
    ChatMessage,
    [
        0 => "role": role,
        1 => "content": content as optional,
        2 => "tool_calls": tool_calls as optional,
        3 => "tool_call_id": tool_call_id as optional,
    ]
);
wire_serde!(ChatMessage);
