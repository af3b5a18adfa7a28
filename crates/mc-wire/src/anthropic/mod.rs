//! The Anthropic Messages API: requests, responses, the SSE event stream, and conversion to
//! the neutral conversation model.

mod block;
mod request;

pub use block::{
    BlockContent, ContentBlock, MediaBlock, MediaBlockKind, RedactedThinkingBlock, TextBlock, ThinkingBlock,
    ToolResultBlock, ToolUseBlock,
};
pub use request::{Message, MessageRole, MessagesRequest, Tool};
