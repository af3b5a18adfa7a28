//! Message content in the Responses API: a bare string or a list of typed parts.
//!
//! Text parts (`input_text` in what the client wrote, `output_text` in what the model wrote)
//! and `refusal` are typed; every other part (`input_image`, `input_file`, `input_audio`,
//! types OpenAI adds later) is kept whole as [`ContentPart::Other`]. The same parts make up
//! a tool call's output when it is not a bare string.

use serde_json::{Map, Value};

use crate::error::{JsonPath, Result, WireError, type_name};
use crate::object::{FromJson, KeyOrder, ObjectReader, WireObject, adopt_fields, serialize_object};
use crate::wire_object::wire_object;

/// Content as sent: a bare string or parts. The form is kept, because it is part of the
/// prompt's bytes and a string must never come back as a part list.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A bare string.
    Text(String),
    /// A list of parts.
    Parts(Vec<ContentPart>),
}

impl serde::Serialize for Content {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Self::Text(text) => serializer.serialize_str(text),
            Self::Parts(parts) => serializer.collect_seq(parts),
        }
    }
}

impl FromJson for Content {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        match value {
            Value::String(text) => Ok(Self::Text(text)),
            array @ Value::Array(_) => Vec::from_json(array, path).map(Self::Parts),
            other => Err(WireError::shape(
                path,
                format!(
                    "expected a string or an array of content parts, found {}",
                    type_name(&other)
                ),
            )),
        }
    }
}

/// Which side wrote a text part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// `input_text`: the client's words (user, system, developer, tool output).
    Input,
    /// `output_text`: the model's words, replayed in an assistant message.
    Output,
}

impl TextKind {
    /// The part's `type`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Input => "input_text",
            Self::Output => "output_text",
        }
    }
}

/// One part of a message's content or of a tool output.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentPart {
    /// `input_text` or `output_text`.
    Text(TextPart),
    /// `refusal`: the model declining, in assistant content.
    Refusal(RefusalPart),
    /// Any other part type, kept exactly as it came.
    Other(Map<String, Value>),
}

impl ContentPart {
    /// A text part of `kind` with no extra fields.
    pub fn text(kind: TextKind, text: impl Into<String>) -> Self {
        Self::Text(TextPart {
            kind,
            text: text.into(),
            rest: Map::new(),
            order: KeyOrder::default(),
        })
    }

    /// The part's `type` string.
    pub fn type_name(&self) -> &str {
        match self {
            Self::Text(part) => part.kind.as_str(),
            Self::Refusal(_) => "refusal",
            Self::Other(raw) => raw.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

/// An `input_text` or `output_text` part.
#[derive(Debug, Clone, PartialEq)]
pub struct TextPart {
    /// Which of the two it is.
    pub kind: TextKind,
    /// The text.
    pub text: String,
    /// Unmodelled fields (`annotations`, `logprobs`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl ContentPart {
    /// Gives this part, as the engine rendered it, the unmodelled fields (`annotations`,
    /// `logprobs`, …) and key order of `client`, the same part as the client sent it, when
    /// both are text of the same kind.
    pub fn adopt_client_fields(&mut self, client: &ContentPart) {
        if let (Self::Text(ours), Self::Text(theirs)) = (self, client)
            && ours.kind == theirs.kind
        {
            adopt_fields(&mut ours.rest, &mut ours.order, &theirs.rest, &theirs.order);
        }
    }
}

/// A `refusal` part.
#[derive(Debug, Clone, PartialEq)]
pub struct RefusalPart {
    /// The model's refusal message.
    pub refusal: String,
    /// Unmodelled fields.
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl FromJson for ContentPart {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let Value::Object(raw) = value else {
            return Err(WireError::shape(
                path,
                format!(
                    "expected a content part object, found {}",
                    type_name(&value)
                ),
            ));
        };
        let kind = match raw.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            Some(other) => {
                return Err(WireError::shape(
                    &path.key("type"),
                    format!("expected a string, found {}", type_name(other)),
                ));
            }
            None => return Err(WireError::shape(path, "missing required field `type`")),
        };
        let text_kind = match kind {
            "input_text" => Some(TextKind::Input),
            "output_text" => Some(TextKind::Output),
            _ => None,
        };
        if let Some(kind) = text_kind {
            let mut reader = ObjectReader::new(raw, path, TextPart::FIELDS);
            let text = reader.require(1)?;
            let (rest, order) = reader.finish();
            return Ok(Self::Text(TextPart {
                kind,
                text,
                rest,
                order,
            }));
        }
        if kind == "refusal" {
            let mut reader = ObjectReader::new(raw, path, RefusalPart::FIELDS);
            let refusal = reader.require(1)?;
            let (rest, order) = reader.finish();
            return Ok(Self::Refusal(RefusalPart {
                refusal,
                rest,
                order,
            }));
        }
        Ok(Self::Other(raw))
    }
}

impl serde::Serialize for ContentPart {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Self::Text(part) => serialize_object(part, serializer),
            Self::Refusal(part) => serialize_object(part, serializer),
            Self::Other(raw) => raw.serialize(serializer),
        }
    }
}

wire_object!(TextPart, type_from = |part: &TextPart| part.kind.as_str(), [1 => "text": text]);
wire_object!(RefusalPart, type = "refusal", [1 => "refusal": refusal]);
