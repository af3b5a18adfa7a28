//! The OpenAI Responses API (`POST /v1/responses`, what Codex speaks): requests, responses,
//! stream events and their accumulation, and conversion to the neutral conversation model.
//!
//! Same contract as the other codecs: typed where the engine reads or rewrites, every other
//! field, item type and part type kept in order, so decode → encode returns the body's
//! bytes (as serde_json writes them) and encoding is a pure function of the value.
//!
//! ```
//! use mc_wire::responses::{Input, Item, ResponsesRequest};
//!
//! let body = br#"{"model":"gpt-5","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"be brief"}]},{"type":"compaction","encrypted_content":"gAAA"}],"store":false,"prompt_cache_key":"t1"}"#;
//! let request = ResponsesRequest::decode(body, 1 << 20)?;
//! let Some(Input::Items(items)) = &request.input else { unreachable!() };
//! assert!(matches!(items[1], Item::Other(_)));
//! assert_eq!(request.prompt_cache_key(), Some("t1"));
//! assert_eq!(request.stateful_reason(), None);
//! assert_eq!(request.encode(), body.to_vec());
//! # Ok::<(), mc_wire::WireError>(())
//! ```

mod accumulator;
mod content;
mod domain;
mod event;
mod item;
mod request;
mod response;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

pub use accumulator::EventAccumulator;
pub use content::{Content, ContentPart, RefusalPart, TextKind, TextPart};
pub use domain::{
    ItemRenderer, from_conversation, item_role, to_conversation, to_conversation_with_starts,
};
pub use event::StreamEvent;
pub use item::{
    CustomToolCallItem, FunctionCallItem, Item, MessageItem, MessageRole, OutputKind,
    ReasoningItem, ToolOutputItem,
};
pub use request::{Input, ResponsesRequest, ResponsesTool};
pub use response::{InputTokensDetails, ResponsesResponse, ResponsesUsage};
