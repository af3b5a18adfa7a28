//! One `data:` payload of a streamed Chat Completions response (`chat.completion.chunk`).
//!
//! A stream is a run of chunks whose deltas add up to the message a non-streaming call would
//! return: content arrives in pieces, each tool call is announced once (id, name) and its
//! arguments follow in fragments under the same `index`, and `finish_reason` closes the
//! choice. With `stream_options.include_usage` a last chunk with no choices carries `usage`;
//! earlier chunks then carry `"usage": null`, which stays in `rest` like every typed null.
//! Typed here is exactly what [`ChunkAccumulator`](super::ChunkAccumulator) needs.

use serde_json::{Map, Value};

use super::message::{ChatRole, reasoning_in};
use super::response::ChatUsage;
use crate::error::{JsonPath, Result};
use crate::object::{
    FromJson, KeyOrder, ObjectReader, WireObject, encode_json, parse_body, wire_serde,
};
use crate::wire_object::wire_object;

/// One stream chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatChunk {
    /// The completion id, the same in every chunk of a stream.
    pub id: Option<String>,
    /// The choices this chunk advances; empty in the final usage chunk.
    pub choices: Vec<ChunkChoice>,
    /// Token usage, only in the final chunk and only when asked for.
    pub usage: Option<ChatUsage>,
    /// Unmodelled fields (`object`, `created`, `model`, `system_fingerprint`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl ChatChunk {
    /// Decodes one `data:` payload no larger than `limit_bytes`. The `[DONE]` sentinel is
    /// not JSON; the caller stops before it.
    pub fn decode(data: &[u8], limit_bytes: usize) -> Result<Self> {
        Self::from_json(parse_body(data, limit_bytes)?, &JsonPath::Root)
    }

    /// Encodes the chunk; a pure function of its value.
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }

    /// The model that answered.
    pub fn model(&self) -> Option<&str> {
        self.rest.get("model")?.as_str()
    }
}

impl FromJson for ChatChunk {
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

/// One choice's step in a chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkChoice {
    /// Which alternative this advances; 0 unless the client set `n`.
    pub index: Option<u64>,
    /// What this step adds; absent from some providers' closing chunks.
    pub delta: Option<ChatDelta>,
    /// Set on the choice's last step.
    pub finish_reason: Option<String>,
    /// Unmodelled fields (`logprobs`, `native_finish_reason`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl FromJson for ChunkChoice {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let index = reader.take(0)?;
        let delta = reader.take(1)?;
        let finish_reason = reader.take(2)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            index,
            delta,
            finish_reason,
            rest,
            order,
        })
    }
}

/// What one step adds to a choice's message.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatDelta {
    /// The author, usually only in the first step.
    pub role: Option<ChatRole>,
    /// The next piece of content.
    pub content: Option<String>,
    /// Pieces of tool calls.
    pub tool_calls: Option<Vec<ToolCallDelta>>,
    /// Unmodelled fields (`refusal`, `reasoning`, `reasoning_content`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl ChatDelta {
    /// The next piece of visible reasoning, with the key it came under.
    pub fn reasoning(&self) -> Option<(&'static str, &str)> {
        reasoning_in(&self.rest)
    }

    /// The next piece of a refusal.
    pub fn refusal(&self) -> Option<&str> {
        self.rest.get("refusal")?.as_str()
    }
}

impl FromJson for ChatDelta {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let role = reader.take(0)?;
        let content = reader.take(1)?;
        let tool_calls = reader.take(2)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            role,
            content,
            tool_calls,
            rest,
            order,
        })
    }
}

/// A piece of one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallDelta {
    /// Which call of the message this continues. Some OpenAI-compatible servers leave it
    /// out; the accumulator then treats a piece with an `id` as a new call.
    pub index: Option<u64>,
    /// The call id, in the call's first piece.
    pub id: Option<String>,
    /// The function's name (first piece) and a fragment of its arguments.
    pub function: Option<FunctionDelta>,
    /// Unmodelled fields (`type`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl FromJson for ToolCallDelta {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let index = reader.take(0)?;
        let id = reader.take(1)?;
        let function = reader.take(2)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            index,
            id,
            function,
            rest,
            order,
        })
    }
}

/// The function half of a [`ToolCallDelta`].
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionDelta {
    /// The function's name, in the call's first piece.
    pub name: Option<String>,
    /// The next fragment of the arguments string; fragments are not JSON on their own.
    pub arguments: Option<String>,
    /// Unmodelled fields.
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl FromJson for FunctionDelta {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let name = reader.take(0)?;
        let arguments = reader.take(1)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            name,
            arguments,
            rest,
            order,
        })
    }
}

wire_object!(ChatChunk, [0 => "id": id as optional, 1 => "choices": choices, 2 => "usage": usage as optional]);
wire_object!(
    ChunkChoice,
    [
        0 => "index": index as optional,
        1 => "delta": delta as optional,
        2 => "finish_reason": finish_reason as optional,
    ]
);
wire_object!(
    ChatDelta,
    [
        0 => "role": role as optional,
        1 => "content": content as optional,
        2 => "tool_calls": tool_calls as optional,
    ]
);
wire_object!(
    ToolCallDelta,
    [0 => "index": index as optional, 1 => "id": id as optional, 2 => "function": function as optional]
);
wire_object!(FunctionDelta, [0 => "name": name as optional, 1 => "arguments": arguments as optional]);
wire_serde!(
    ChatChunk,
    ChunkChoice,
    ChatDelta,
    ToolCallDelta,
    FunctionDelta
);
