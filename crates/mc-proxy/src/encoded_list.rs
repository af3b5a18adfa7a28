//! The encoded message list of a session's last upstream request, on its wire, kept so the
//! next request encodes only what changed.

use crate::encoded_chat::EncodedChat;
use crate::encoded_messages::EncodedMessages;
use crate::encoded_responses::EncodedResponses;

/// A session's last upstream message list.
#[derive(Debug)]
pub enum EncodedList {
    /// An Anthropic Messages body's.
    Anthropic(EncodedMessages),
    /// A Chat Completions body's.
    Chat(EncodedChat),
    /// A Responses body's.
    Responses(EncodedResponses),
}

impl EncodedList {
    /// The Anthropic list, when the last request was one.
    pub fn into_anthropic(self) -> Option<EncodedMessages> {
        match self {
            Self::Anthropic(list) => Some(list),
            Self::Chat(_) | Self::Responses(_) => None,
        }
    }

    /// The Chat list, when the last request was one.
    pub fn into_chat(self) -> Option<EncodedChat> {
        match self {
            Self::Chat(list) => Some(list),
            Self::Anthropic(_) | Self::Responses(_) => None,
        }
    }

    /// The Responses list, when the last request was one.
    pub fn into_responses(self) -> Option<EncodedResponses> {
        match self {
            Self::Responses(list) => Some(list),
            Self::Anthropic(_) | Self::Chat(_) => None,
        }
    }
}

impl mc_core::HeldBytes for EncodedList {
    fn held_bytes(&self) -> usize {
        match self {
            Self::Anthropic(list) => list.held_bytes(),
            Self::Chat(list) => list.held_bytes(),
            Self::Responses(list) => list.held_bytes(),
        }
    }
}
