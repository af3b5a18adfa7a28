//! The Responses response object (a non-streaming body, and the `response` inside the
//! stream's lifecycle events) and its usage figures.

use serde_json::{Map, Value};

use super::item::Item;
use crate::error::{JsonPath, Result};
use crate::object::{
    FromJson, KeyOrder, ObjectReader, WireObject, encode_json, parse_body, wire_serde,
};
use crate::wire_object::wire_object;

/// A response.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponsesResponse {
    /// The response id (`resp_…`).
    pub id: Option<String>,
    /// `in_progress`, `completed`, `incomplete`, `failed`, …
    pub status: Option<String>,
    /// The items the model produced; empty in the stream's first events.
    pub output: Option<Vec<Item>>,
    /// Token usage, once the response is done.
    pub usage: Option<ResponsesUsage>,
    /// Unmodelled fields (`object`, `created_at`, `model`, `error`, `incomplete_details`,
    /// the request's echoed settings, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl ResponsesResponse {
    /// A response with no extra fields.
    pub fn new(
        id: Option<String>,
        status: Option<String>,
        output: Vec<Item>,
        usage: Option<ResponsesUsage>,
    ) -> Self {
        Self {
            id,
            status,
            output: Some(output),
            usage,
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }

    /// Decodes a response body no larger than `limit_bytes`.
    pub fn decode(body: &[u8], limit_bytes: usize) -> Result<Self> {
        Self::from_json(parse_body(body, limit_bytes)?, &JsonPath::Root)
    }

    /// Encodes the response; a pure function of its value.
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }

    /// The model that answered.
    pub fn model(&self) -> Option<&str> {
        self.rest.get("model")?.as_str()
    }

    /// The output items (none when absent).
    pub fn output_items(&self) -> &[Item] {
        self.output.as_deref().unwrap_or(&[])
    }

    /// The error's `code` of a failed response (`context_length_exceeded`, …).
    pub fn error_code(&self) -> Option<&str> {
        self.rest.get("error")?.get("code")?.as_str()
    }

    /// Why an incomplete response stopped (`max_output_tokens`, `content_filter`).
    pub fn incomplete_reason(&self) -> Option<&str> {
        self.rest.get("incomplete_details")?.get("reason")?.as_str()
    }
}

impl FromJson for ResponsesResponse {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let id = reader.take(0)?;
        let status = reader.take(1)?;
        let output = reader.take(2)?;
        let usage = reader.take(3)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            id,
            status,
            output,
            usage,
            rest,
            order,
        })
    }
}

/// Token usage of one response.
///
/// `input_tokens` is the whole prompt; `input_tokens_details.cached_tokens` the part of it
/// served from the provider's prefix cache.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResponsesUsage {
    /// The whole prompt, cached part included.
    pub input_tokens: Option<u64>,
    /// The breakdown of the prompt.
    pub input_tokens_details: Option<InputTokensDetails>,
    /// Generated tokens, reasoning included.
    pub output_tokens: Option<u64>,
    /// Input plus output.
    pub total_tokens: Option<u64>,
    /// Unmodelled fields (`output_tokens_details`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl ResponsesUsage {
    /// Usage with the four counts set and no extra fields.
    pub fn new(input_tokens: u64, cached_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens: Some(input_tokens),
            input_tokens_details: Some(InputTokensDetails {
                cached_tokens: Some(cached_tokens),
                rest: Map::new(),
                order: KeyOrder::default(),
            }),
            output_tokens: Some(output_tokens),
            total_tokens: Some(input_tokens.saturating_add(output_tokens)),
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }

    /// Prompt tokens read from the cache; `None` when the provider did not say.
    pub fn cached_tokens(&self) -> Option<u64> {
        self.input_tokens_details.as_ref()?.cached_tokens
    }
}

impl FromJson for ResponsesUsage {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let input_tokens = reader.take(0)?;
        let input_tokens_details = reader.take(1)?;
        let output_tokens = reader.take(2)?;
        let total_tokens = reader.take(3)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            input_tokens,
            input_tokens_details,
            output_tokens,
            total_tokens,
            rest,
            order,
        })
    }
}

/// `usage.input_tokens_details`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputTokensDetails {
    /// Prompt tokens served from the cache.
    pub cached_tokens: Option<u64>,
    /// Unmodelled fields.
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl FromJson for InputTokensDetails {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let cached_tokens = reader.take(0)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            cached_tokens,
            rest,
            order,
        })
    }
}

wire_object!(
    ResponsesResponse,
    [
        0 => "id": id as optional,
        1 => "status": status as optional,
        2 => "output": output as optional,
        3 => "usage": usage as optional,
    ]
);
wire_object!(
    ResponsesUsage,
    [
        0 => "input_tokens": input_tokens as optional,
        1 => "input_tokens_details": input_tokens_details as optional,
        2 => "output_tokens": output_tokens as optional,
        3 => "total_tokens": total_tokens as optional,
    ]
);
wire_object!(InputTokensDetails, [0 => "cached_tokens": cached_tokens as optional]);
wire_serde!(ResponsesResponse, ResponsesUsage, InputTokensDetails);
