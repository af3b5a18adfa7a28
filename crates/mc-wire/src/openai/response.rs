//! The non-streaming Chat Completions response body and its usage figures.

use serde_json::{Map, Value};

use super::message::ChatMessage;
use crate::error::{JsonPath, Result};
use crate::object::{
    FromJson, KeyOrder, ObjectReader, WireObject, encode_json, parse_body, wire_serde,
};
use crate::wire_object::wire_object;

/// A non-streaming response, or the response a stream accumulates to.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// The completion id; absent from some OpenAI-compatible servers.
    pub id: Option<String>,
    /// The generated alternatives; one unless the client set `n`.
    pub choices: Vec<ChatChoice>,
    /// Token usage, including cached prompt tokens.
    pub usage: Option<ChatUsage>,
    /// Unmodelled fields (`object`, `created`, `model`, `system_fingerprint`, `provider`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl ChatResponse {
    /// A response with no extra fields.
    pub fn new(id: Option<String>, choices: Vec<ChatChoice>, usage: Option<ChatUsage>) -> Self {
        Self {
            id,
            choices,
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

    /// The first choice's message: the answer, unless the client asked for several.
    pub fn message(&self) -> Option<&ChatMessage> {
        self.choices.first().map(|choice| &choice.message)
    }

    /// Why the first choice stopped (`stop`, `tool_calls`, `length`, …).
    pub fn finish_reason(&self) -> Option<&str> {
        self.choices.first()?.finish_reason.as_deref()
    }
}

impl FromJson for ChatResponse {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let id = reader.take(0)?;
        let choices = reader.require(1)?;
        let usage = reader.take(2)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            id,
            choices,
            usage,
            rest,
            order,
        })
    }
}

/// One generated alternative.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatChoice {
    /// Which alternative this is.
    pub index: Option<u64>,
    /// The assistant message.
    pub message: ChatMessage,
    /// Why generation stopped; `None` when absent or `null`.
    pub finish_reason: Option<String>,
    /// Unmodelled fields (`logprobs`, `native_finish_reason`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl ChatChoice {
    /// A choice with no extra fields.
    pub fn new(index: u64, message: ChatMessage, finish_reason: Option<String>) -> Self {
        Self {
            index: Some(index),
            message,
            finish_reason,
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }
}

impl FromJson for ChatChoice {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let index = reader.take(0)?;
        let message = reader.require(1)?;
        let finish_reason = reader.take(2)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            index,
            message,
            finish_reason,
            rest,
            order,
        })
    }
}

/// Token usage of one call.
///
/// Unlike Anthropic's, `prompt_tokens` is the whole prompt; `cached_tokens` is the part of it
/// served from the provider's prefix cache (billed at a discount), which is what the cache
/// simulator is checked against.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatUsage {
    /// The whole prompt, cached part included.
    pub prompt_tokens: Option<u64>,
    /// Generated tokens, reasoning included.
    pub completion_tokens: Option<u64>,
    /// Prompt plus completion.
    pub total_tokens: Option<u64>,
    /// The breakdown of the prompt.
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    /// Unmodelled fields (`completion_tokens_details`, `cost`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl ChatUsage {
    /// Prompt tokens read from the provider's cache; `None` when the provider did not say.
    pub fn cached_tokens(&self) -> Option<u64> {
        self.prompt_tokens_details.as_ref()?.cached_tokens
    }

    /// Reasoning tokens inside `completion_tokens`, when reported.
    pub fn reasoning_tokens(&self) -> Option<u64> {
        self.rest
            .get("completion_tokens_details")?
            .get("reasoning_tokens")?
            .as_u64()
    }
}

impl FromJson for ChatUsage {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let prompt_tokens = reader.take(0)?;
        let completion_tokens = reader.take(1)?;
        let total_tokens = reader.take(2)?;
        let prompt_tokens_details = reader.take(3)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            prompt_tokens,
            completion_tokens,
            total_tokens,
            prompt_tokens_details,
            rest,
            order,
        })
    }
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptTokensDetails {
    /// Prompt tokens served from the cache.
    pub cached_tokens: Option<u64>,
    /// Unmodelled fields (`audio_tokens`, `cache_write_tokens`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl PromptTokensDetails {
    /// Details with only the cached count.
    pub fn new(cached_tokens: Option<u64>) -> Self {
        Self {
            cached_tokens,
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }
}

impl FromJson for PromptTokensDetails {
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

wire_object!(ChatResponse, [0 => "id": id as optional, 1 => "choices": choices, 2 => "usage": usage as optional]);
wire_object!(
    ChatChoice,
    [0 => "index": index as optional, 1 => "message": message, 2 => "finish_reason": finish_reason as optional]
);
wire_object!(
    ChatUsage,
    [
        0 => "prompt_tokens": prompt_tokens as optional,
        1 => "completion_tokens": completion_tokens as optional,
        2 => "total_tokens": total_tokens as optional,
        3 => "prompt_tokens_details": prompt_tokens_details as optional,
    ]
);
wire_object!(PromptTokensDetails, [0 => "cached_tokens": cached_tokens as optional]);
wire_serde!(ChatResponse, ChatChoice, ChatUsage, PromptTokensDetails);
