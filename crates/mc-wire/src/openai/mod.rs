//! The OpenAI Chat Completions API (`POST /v1/chat/completions`): requests, responses, stream
//! chunks and their accumulation, and conversion to the neutral conversation model.
//!
//! Same contract as the Anthropic codecs: typed where the engine reads or rewrites, every
//! other field and part type kept in order, so decode → encode returns the body's bytes
//! (as serde_json writes them) and encoding is a pure function of the value. A typed key
//! sent as `null` (`"content": null` beside `tool_calls`, `"usage": null` in stream chunks)
//! is kept verbatim and reads as absent.
//!
//! ```
//! use mc_wire::openai::{ChatRequest, ChatRole};
//!
//! let body = br#"{"model":"gpt-4o","messages":[{"role":"developer","content":"be brief"}],"stream":true}"#;
//! let request = ChatRequest::decode(body, 1 << 20)?;
//! assert_eq!(request.messages[0].role, ChatRole::Developer);
//! assert!(request.is_stream() && !request.includes_stream_usage());
//! assert_eq!(request.encode(), body.to_vec());
//! # Ok::<(), mc_wire::WireError>(())
//! ```

mod accumulator;
mod chunk;
mod domain;
mod message;
mod part;
mod request;
mod response;
mod tool_call;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

pub use accumulator::ChunkAccumulator;
pub use chunk::{ChatChunk, ChatDelta, ChunkChoice, FunctionDelta, ToolCallDelta};
pub use domain::{from_message, to_conversation, to_message};
pub use message::{ChatMessage, ChatRole};
pub use part::{
    ChatContent, ContentPart, FilePart, ImageUrlPart, InputAudioPart, RefusalPart, TextPart,
};
pub use request::{ChatRequest, ChatTool};
pub use response::{ChatChoice, ChatResponse, ChatUsage, PromptTokensDetails};
pub use tool_call::{FunctionCall, ToolCall};
