//! The encoded message list of a session's last upstream request, on its wire, kept so the
//! next request encodes only what changed.

use crate::encoded_chat::EncodedChat;
use crate::encoded_messages::EncodedMessages;

/// A session's last upstream message list.
#[derive(Debug)]
pub enum EncodedList {
    /// An Anthropic Messages body's.
    Anthropic(EncodedMessages),
    /// A Chat Completions body's.
    Chat(EncodedChat),
}

impl EncodedList {
    /// The Anthropic list, when the last request was one.
    pub fn anthropic(&self) -> Option<&EncodedMessages> {
        match self {
            Self::Anthropic(list) => Some(list),
            Self::Chat(_) => None,
        }
    }

    /// The Chat list, when the last request was one.
    pub fn chat(&self) -> Option<&EncodedChat> {
        match self {
            Self::Chat(list) => Some(list),
            Self::Anthropic(_) => None,
        }
    }
}

impl mc_core::HeldBytes for EncodedList {
    fn held_bytes(&self) -> usize {
        match self {
            Self::Anthropic(list) => list.held_bytes(),
            Self::Chat(list) => list.held_bytes(),
        }
    }
}
