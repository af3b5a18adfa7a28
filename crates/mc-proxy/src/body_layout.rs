//! Where a client body's messages lie, on its wire: what the decode found, for the render
//! to reuse the previous body by and for the next request to be decoded by its new part.

use crate::chat_incremental::ChatLayout;
use crate::responses_incremental::ResponsesLayout;
use mc_wire::anthropic_incremental::Layout;

/// Where a body's messages lie, on its wire.
pub enum BodyLayout {
    /// An Anthropic body's ([`crate::incremental`]).
    Anthropic(Layout),
    /// A Chat body's ([`crate::chat_incremental`]).
    Chat(ChatLayout),
    /// A Responses body's ([`crate::responses_incremental`]).
    Responses(ResponsesLayout),
}

impl BodyLayout {
    /// The prefix identity the decode already knows (computed once per head).
    pub fn prefix_identity(&self) -> Option<&str> {
        match self {
            Self::Anthropic(layout) => layout.prefix_identity(),
            Self::Chat(layout) => Some(layout.prefix_identity()),
            Self::Responses(layout) => Some(layout.prefix_identity()),
        }
    }

    /// Where the body's message list (Responses: input list) opens, as the decode found it.
    pub fn list_open(&self) -> Option<usize> {
        match self {
            Self::Anthropic(layout) => layout.list_open(),
            Self::Chat(layout) => Some(layout.list_open()),
            Self::Responses(layout) => Some(layout.list_open()),
        }
    }
}
