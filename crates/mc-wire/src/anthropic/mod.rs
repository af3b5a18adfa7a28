//! The Anthropic Messages API: requests, responses, the SSE event stream, and conversion to
//! the neutral conversation model.

mod block;
mod cache_marks;
mod domain;
mod request;
mod response;
mod stream;

pub use block::{
    BlockContent, ContentBlock, MediaBlock, MediaBlockKind, RedactedThinkingBlock, TextBlock,
    ThinkingBlock, ToolResultBlock, ToolUseBlock,
};
pub use cache_marks::{client_ttl, prefix_identity, strip_client_markers, uses_one_hour};
pub use domain::{
    from_message, into_conversation, into_message, into_wire_message, to_conversation, to_message,
};
pub use request::{Message, MessageRole, MessagesRequest, Tool};
pub use response::{MessagesResponse, Usage};
pub use stream::{EventKind, MessageAccumulator, StreamEvent};
