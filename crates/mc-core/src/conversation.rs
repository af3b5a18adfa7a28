//! The provider-neutral conversation model.
//!
//! Provider codecs (`mc-wire`) convert their wire shapes into these types at the boundary, so
//! the engine reasons about one model whatever the client speaks. The model keeps every part
//! the engine does not understand as an [`Part::Unknown`] carrying its raw JSON: nothing a
//! client sends is dropped on the way into the raw log.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a message.
///
/// `System` appears inside the message list too: Claude Code sends system-role messages
/// mid-conversation, and OpenAI clients send `system` and `developer` messages there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions from the client or the operator.
    System,
    /// The human, or the harness speaking for the human (tool results on Anthropic).
    User,
    /// The model.
    Assistant,
    /// A tool's answer carried in its own message (OpenAI's `tool` role).
    Tool,
}

impl Role {
    /// The lowercase name used in storage and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
        }
    }

    /// Parses the name written by [`Role::as_str`].
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "system" => Some(Self::System),
            "user" => Some(Self::User),
            "assistant" => Some(Self::Assistant),
            "tool" => Some(Self::Tool),
            _ => None,
        }
    }
}

/// What kind of binary media a [`Part::Media`] carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    /// A picture (`image` block, `image_url` part).
    Image,
    /// A PDF or text document (`document` block, `file` part).
    Document,
    /// Audio input (`input_audio` part).
    Audio,
}

/// One unit of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Part {
    /// Plain text written by a user, the model, or the system.
    Text {
        /// The text exactly as sent.
        text: String,
        /// Fields the client sent on the text beside it (Anthropic's `citations` on an
        /// answer that quoted a web search, fields of a harness), kept so the part goes back
        /// as it came; `None` for plain text, which is nearly all of it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fields: Option<Box<serde_json::Map<String, Value>>>,
    },
    /// The model asking for a tool to run.
    ToolCall {
        /// The provider's call id, which the matching result names.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments as JSON. OpenAI sends them as a string; a string that is not valid
        /// JSON, or nests deeper than [`MAX_INPUT_NESTING`], stays a JSON string here so
        /// nothing is lost.
        input: Value,
    },
    /// A tool's answer to the call named by `call_id`.
    ToolResult {
        /// The id of the call this answers.
        call_id: String,
        /// What the tool returned; text and media parts.
        content: Vec<Part>,
        /// The tool reported failure.
        is_error: bool,
    },
    /// The model's visible reasoning. Providers that sign reasoning reject it when it is
    /// altered, so the signature travels with the text.
    Thinking {
        /// The reasoning text.
        text: String,
        /// The provider's signature over the text, when it gave one.
        signature: Option<String>,
    },
    /// Reasoning the provider returned encrypted; opaque to everyone but the provider.
    RedactedThinking {
        /// The encrypted payload.
        data: String,
    },
    /// An image, document or audio clip.
    Media {
        /// Which kind of media this is.
        media: MediaKind,
        /// Where the bytes are (base64 data, a URL, a file id), exactly as sent.
        source: Value,
    },
    /// A block type the model does not know (server tool blocks, future types). Kept whole so
    /// it survives storage and rendering unchanged.
    Unknown {
        /// The provider's type name, or an empty string when it gave none.
        type_name: String,
        /// The whole block as the provider sent it.
        raw: Value,
    },
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            fields: None,
        }
    }

    /// Whether this part carries the output of a tool.
    pub fn is_tool_result(&self) -> bool {
        matches!(self, Self::ToolResult { .. })
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its content, in order.
    pub parts: Vec<Part>,
}

/// The texts of the text parts among `parts` (a message's, or a tool result's content), in
/// order.
fn texts_of(parts: &[Part]) -> impl Iterator<Item = &str> {
    parts.iter().filter_map(|part| match part {
        Part::Text { text, .. } => Some(text.as_str()),
        _ => None,
    })
}

/// The most arrays and objects a tool call's input may nest. The store keeps a message's
/// parts as a JSON array of objects, two levels above each input, and reads them back with
/// serde_json's limit of 127 levels: an input nested deeper could be written but not read.
/// An input decoded from a request body is always within it (the body's own levels count
/// against the same limit); arguments that arrive as text are read as JSON only within it.
pub const MAX_INPUT_NESTING: usize = 125;

/// How many arrays and objects `value` nests, 0 for a scalar. Walked with a stack of its
/// own, so no value is too deep to measure.
pub fn value_nesting(value: &Value) -> usize {
    let mut deepest = 0;
    let mut pending = vec![(value, 0)];
    while let Some((value, depth)) = pending.pop() {
        match value {
            Value::Array(items) => pending.extend(items.iter().map(|item| (item, depth + 1))),
            Value::Object(map) => pending.extend(map.values().map(|item| (item, depth + 1))),
            _ => continue,
        }
        deepest = deepest.max(depth + 1);
    }
    deepest
}

/// Those texts joined by newlines, as a reader would see them.
pub fn joined_texts(parts: &[Part]) -> String {
    texts_of(parts).collect::<Vec<_>>().join("\n")
}

impl Message {
    /// A message from its role and parts.
    pub fn new(role: Role, parts: Vec<Part>) -> Self {
        Self { role, parts }
    }

    /// The texts of the message's text parts, in order.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        texts_of(&self.parts)
    }

    /// The ids of the tool calls this message makes, in order.
    pub fn tool_call_ids(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::ToolCall { id, .. } => Some(id.as_str()),
            _ => None,
        })
    }

    /// The ids of the calls this message answers, in order.
    pub fn tool_result_ids(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn role_names_round_trip() {
        for role in [Role::System, Role::User, Role::Assistant, Role::Tool] {
            assert_eq!(Role::from_name(role.as_str()), Some(role));
        }
        assert_eq!(Role::from_name("developer"), None);
    }

    #[test]
    fn tool_ids_come_out_in_order() {
        let call = Message::new(
            Role::Assistant,
            vec![
                Part::text("running two"),
                Part::ToolCall {
                    id: "a".into(),
                    name: "Bash".into(),
                    input: json!({"command": "ls"}),
                },
                Part::ToolCall {
                    id: "b".into(),
                    name: "Read".into(),
                    input: json!({"path": "x"}),
                },
            ],
        );
        assert_eq!(call.tool_call_ids().collect::<Vec<_>>(), ["a", "b"]);
        let result = Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: "b".into(),
                content: vec![Part::text("ok")],
                is_error: false,
            }],
        );
        assert_eq!(result.tool_result_ids().collect::<Vec<_>>(), ["b"]);
        assert!(result.parts[0].is_tool_result());
    }

    #[test]
    fn nesting_counts_arrays_and_objects() {
        assert_eq!(value_nesting(&json!("text")), 0);
        assert_eq!(value_nesting(&json!([])), 1);
        assert_eq!(value_nesting(&json!({"a": [1, {"b": []}], "c": 2})), 4);
        let deep = (0..300).fold(json!(1), |inner, _| json!([inner]));
        assert_eq!(value_nesting(&deep), 300);
    }

    #[test]
    fn serialised_form_is_stable() {
        let message = Message::new(Role::User, vec![Part::text("hi")]);
        let json = serde_json::to_string(&message).unwrap();
        assert_eq!(
            json,
            r#"{"role":"user","parts":[{"kind":"text","text":"hi"}]}"#
        );
        assert_eq!(serde_json::from_str::<Message>(&json).unwrap(), message);
    }
}
