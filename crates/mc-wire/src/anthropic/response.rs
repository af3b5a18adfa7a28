//! The Anthropic Messages response body and its usage figures.

use serde_json::{Map, Value};

use super::block::ContentBlock;
use crate::error::{JsonPath, Result};
use crate::object::{
    FromJson, KeyOrder, ObjectReader, WireObject, encode_json, parse_body, wire_serde,
};
use crate::wire_object::wire_object;

/// A non-streaming response, or the message a stream accumulates to.
#[derive(Debug, Clone, PartialEq)]
pub struct MessagesResponse {
    /// The message id; clients merge assistant messages that share one.
    pub id: String,
    /// The generated blocks.
    pub content: Vec<ContentBlock>,
    /// Token usage, including cache reads and writes.
    pub usage: Option<Usage>,
    /// Unmodelled fields (`type`, `role`, `model`, `stop_reason`, `stop_sequence`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl MessagesResponse {
    /// Decodes a response body no larger than `limit_bytes`.
    pub fn decode(body: &[u8], limit_bytes: usize) -> Result<Self> {
        Self::from_json(parse_body(body, limit_bytes)?, &JsonPath::Root)
    }

    /// Encodes the response; a pure function of its value.
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }

    /// Why generation stopped (`end_turn`, `tool_use`, `max_tokens`, …), once known.
    pub fn stop_reason(&self) -> Option<&str> {
        self.rest.get("stop_reason")?.as_str()
    }

    /// The model that answered.
    pub fn model(&self) -> Option<&str> {
        self.rest.get("model")?.as_str()
    }
}

impl FromJson for MessagesResponse {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let id = reader.require(0)?;
        let content = reader.require(1)?;
        let usage = reader.take(2)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            id,
            content,
            usage,
            rest,
            order,
        })
    }
}

wire_object!(
    MessagesResponse,
    [0 => "id": id, 1 => "content": content, 2 => "usage": usage as optional]
);

/// Token usage as Anthropic reports it.
///
/// `input_tokens` counts only what follows the last cache hit or write; the whole prompt is
/// `input + cache_creation + cache_read`. A streamed `message_delta` may carry only some of
/// the fields, so each is optional and [`Usage::merge`] folds updates in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    /// Uncached input tokens.
    pub input_tokens: Option<u64>,
    /// Tokens written to the cache (billed at 1.25x or 2x).
    pub cache_creation_input_tokens: Option<u64>,
    /// Tokens read from the cache (billed at 0.1x).
    pub cache_read_input_tokens: Option<u64>,
    /// Generated tokens.
    pub output_tokens: Option<u64>,
    /// Unmodelled fields (`cache_creation` with the 5m/1h split, `service_tier`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl Usage {
    /// The whole prompt size: uncached input plus cache writes plus cache reads.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens.unwrap_or(0)
            + self.cache_creation_input_tokens.unwrap_or(0)
            + self.cache_read_input_tokens.unwrap_or(0)
    }

    /// The cache-write split by TTL, `(5 minutes, 1 hour)`, when the provider reported it.
    pub fn cache_creation_split(&self) -> Option<(u64, u64)> {
        let split = self.rest.get("cache_creation")?;
        let five = split
            .get("ephemeral_5m_input_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let hour = split
            .get("ephemeral_1h_input_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        Some((five, hour))
    }

    /// Folds a later report in: fields present in `update` replace ours.
    pub fn merge(&mut self, update: &Usage) {
        let fields = [
            (&mut self.input_tokens, update.input_tokens),
            (
                &mut self.cache_creation_input_tokens,
                update.cache_creation_input_tokens,
            ),
            (
                &mut self.cache_read_input_tokens,
                update.cache_read_input_tokens,
            ),
            (&mut self.output_tokens, update.output_tokens),
        ];
        for (ours, theirs) in fields {
            if theirs.is_some() {
                *ours = theirs;
            }
        }
        for (key, value) in &update.rest {
            self.rest.insert(key.clone(), value.clone());
        }
    }
}

impl FromJson for Usage {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let input_tokens = reader.take(0)?;
        let cache_creation_input_tokens = reader.take(1)?;
        let cache_read_input_tokens = reader.take(2)?;
        let output_tokens = reader.take(3)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            input_tokens,
            cache_creation_input_tokens,
            cache_read_input_tokens,
            output_tokens,
            rest,
            order,
        })
    }
}

wire_object!(
    Usage,
    [
        0 => "input_tokens": input_tokens as optional,
        1 => "cache_creation_input_tokens": cache_creation_input_tokens as optional,
        2 => "cache_read_input_tokens": cache_read_input_tokens as optional,
        3 => "output_tokens": output_tokens as optional,
    ]
);

wire_serde!(MessagesResponse, Usage);
