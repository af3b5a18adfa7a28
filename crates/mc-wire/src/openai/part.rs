//! Content parts of OpenAI chat messages, and the string-or-parts content they make up.
//!
//! The part types the engine maps to the neutral model are typed; any other type
//! (`input_text` from a confused client, types OpenAI adds later) is kept whole as
//! [`ContentPart::Unknown`]. Fields we do not model stay in each part's `rest` map in their
//! original order.

use serde_json::{Map, Value};

use crate::error::{JsonPath, Result, WireError, type_name};
use crate::object::{FromJson, KeyOrder, ObjectReader, WireObject, adopt_fields, serialize_object};
use crate::wire_object::wire_object;

/// A message's content: a bare string or a list of parts. The form is kept, because the
/// provider renders the two differently and a string must never come back as a part list.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatContent {
    /// A bare string.
    Text(String),
    /// A list of parts.
    Parts(Vec<ContentPart>),
}

impl ChatContent {
    /// Takes the form `client` (the same content as the client sent it) has: a list of one
    /// text part stays a list, and parts that line up keep their fields (`cache_control`,
    /// fields of the harness). The texts stay the engine's.
    pub(super) fn adopt_client_form(&mut self, client: &ChatContent) {
        match (&mut *self, client) {
            (Self::Text(text), Self::Parts(theirs)) => {
                if let [ContentPart::Text(their_part)] = theirs.as_slice() {
                    let mut part = their_part.clone();
                    part.text = std::mem::take(text);
                    *self = Self::Parts(vec![ContentPart::Text(part)]);
                }
            }
            (Self::Parts(ours), Self::Parts(theirs)) if ours.len() == theirs.len() => {
                for (our_part, their_part) in ours.iter_mut().zip(theirs) {
                    if let (ContentPart::Text(ours), ContentPart::Text(theirs)) =
                        (our_part, their_part)
                    {
                        adopt_fields(&mut ours.rest, &mut ours.order, &theirs.rest, &theirs.order);
                    }
                }
            }
            _ => {}
        }
    }
}

impl serde::Serialize for ChatContent {
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

impl FromJson for ChatContent {
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

/// One part of a message's content.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentPart {
    /// `text`.
    Text(TextPart),
    /// `image_url`: a URL or a `data:` URI.
    ImageUrl(ImageUrlPart),
    /// `input_audio`: base64 audio with its format.
    InputAudio(InputAudioPart),
    /// `file`: an uploaded file id or inline file data.
    File(FilePart),
    /// `refusal`: the model declining, in assistant content.
    Refusal(RefusalPart),
    /// Any other part type, kept exactly as it came.
    Unknown(Map<String, Value>),
}

impl ContentPart {
    /// A text part with no extra fields.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextPart {
            text: text.into(),
            rest: Map::new(),
            order: KeyOrder::default(),
        })
    }

    /// An `image_url` part from its `image_url` object.
    pub fn image_url(image_url: Value) -> Self {
        Self::ImageUrl(ImageUrlPart {
            image_url,
            rest: Map::new(),
            order: KeyOrder::default(),
        })
    }

    /// An `input_audio` part from its `input_audio` object.
    pub fn input_audio(input_audio: Value) -> Self {
        Self::InputAudio(InputAudioPart {
            input_audio,
            rest: Map::new(),
            order: KeyOrder::default(),
        })
    }

    /// A `file` part from its `file` object.
    pub fn file(file: Value) -> Self {
        Self::File(FilePart {
            file,
            rest: Map::new(),
            order: KeyOrder::default(),
        })
    }

    /// The part's `type` string.
    pub fn type_name(&self) -> &str {
        match self {
            Self::Text(_) => "text",
            Self::ImageUrl(_) => "image_url",
            Self::InputAudio(_) => "input_audio",
            Self::File(_) => "file",
            Self::Refusal(_) => "refusal",
            Self::Unknown(raw) => raw.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The fields this codec does not model.
    pub fn rest(&self) -> &Map<String, Value> {
        match self {
            Self::Text(part) => &part.rest,
            Self::ImageUrl(part) => &part.rest,
            Self::InputAudio(part) => &part.rest,
            Self::File(part) => &part.rest,
            Self::Refusal(part) => &part.rest,
            Self::Unknown(raw) => raw,
        }
    }
}

/// A `text` part.
#[derive(Debug, Clone, PartialEq)]
pub struct TextPart {
    /// The text.
    pub text: String,
    /// Unmodelled fields (`cache_control` from clients that send Anthropic-style markers, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

/// An `image_url` part.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageUrlPart {
    /// `{url, detail}`, kept as sent: the engine never reads inside it.
    pub image_url: Value,
    /// Unmodelled fields.
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

/// An `input_audio` part.
#[derive(Debug, Clone, PartialEq)]
pub struct InputAudioPart {
    /// `{data, format}`, kept as sent.
    pub input_audio: Value,
    /// Unmodelled fields.
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

/// A `file` part.
#[derive(Debug, Clone, PartialEq)]
pub struct FilePart {
    /// `{file_id}` or `{file_data, filename}`, kept as sent.
    pub file: Value,
    /// Unmodelled fields.
    pub rest: Map<String, Value>,
    order: KeyOrder,
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

/// The part types this codec types, read off `type` before the object is taken apart.
#[derive(Clone, Copy)]
enum PartType {
    Text,
    ImageUrl,
    InputAudio,
    File,
    Refusal,
    Other,
}

impl PartType {
    fn of(raw: &Map<String, Value>, path: &JsonPath<'_>) -> Result<Self> {
        match raw.get("type") {
            Some(Value::String(kind)) => Ok(match kind.as_str() {
                "text" => Self::Text,
                "image_url" => Self::ImageUrl,
                "input_audio" => Self::InputAudio,
                "file" => Self::File,
                "refusal" => Self::Refusal,
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
        Ok(match PartType::of(&raw, path)? {
            PartType::Text => {
                let mut reader = ObjectReader::new(raw, path, TextPart::FIELDS);
                let text = reader.require(1)?;
                let (rest, order) = reader.finish();
                Self::Text(TextPart { text, rest, order })
            }
            PartType::ImageUrl => {
                let mut reader = ObjectReader::new(raw, path, ImageUrlPart::FIELDS);
                let image_url = reader.require(1)?;
                let (rest, order) = reader.finish();
                Self::ImageUrl(ImageUrlPart {
                    image_url,
                    rest,
                    order,
                })
            }
            PartType::InputAudio => {
                let mut reader = ObjectReader::new(raw, path, InputAudioPart::FIELDS);
                let input_audio = reader.require(1)?;
                let (rest, order) = reader.finish();
                Self::InputAudio(InputAudioPart {
                    input_audio,
                    rest,
                    order,
                })
            }
            PartType::File => {
                let mut reader = ObjectReader::new(raw, path, FilePart::FIELDS);
                let file = reader.require(1)?;
                let (rest, order) = reader.finish();
                Self::File(FilePart { file, rest, order })
            }
            PartType::Refusal => {
                let mut reader = ObjectReader::new(raw, path, RefusalPart::FIELDS);
                let refusal = reader.require(1)?;
                let (rest, order) = reader.finish();
                Self::Refusal(RefusalPart {
                    refusal,
                    rest,
                    order,
                })
            }
            PartType::Other => Self::Unknown(raw),
        })
    }
}

impl serde::Serialize for ContentPart {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Self::Text(part) => serialize_object(part, serializer),
            Self::ImageUrl(part) => serialize_object(part, serializer),
            Self::InputAudio(part) => serialize_object(part, serializer),
            Self::File(part) => serialize_object(part, serializer),
            Self::Refusal(part) => serialize_object(part, serializer),
            Self::Unknown(raw) => raw.serialize(serializer),
        }
    }
}

impl<'de> serde::Deserialize<'de> for ContentPart {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let value = <Value as serde::Deserialize>::deserialize(deserializer)?;
        Self::from_json(value, &JsonPath::Root).map_err(<D::Error as serde::de::Error>::custom)
    }
}

wire_object!(TextPart, type = "text", [1 => "text": text]);
wire_object!(ImageUrlPart, type = "image_url", [1 => "image_url": image_url]);
wire_object!(InputAudioPart, type = "input_audio", [1 => "input_audio": input_audio]);
wire_object!(FilePart, type = "file", [1 => "file": file]);
wire_object!(RefusalPart, type = "refusal", [1 => "refusal": refusal]);
