//! Decoding a follow-up Chat Completions request by its new messages only, as
//! [`crate::incremental`] does for Anthropic.
//!
//! A Chat client resends the whole conversation on every call, and decoding it (the wire's
//! lossless decode reads every value in order), converting it to the neutral model and
//! hashing it was most of a Chat call's cost on a long session. A follow-up repeats the
//! previous request's bytes up to its first new or changed message, and its bytes outside
//! the message list when its model, tools and parameters did not change. So the body is
//! compared with the remembered requests': with the same bytes outside the list and at
//! least one leading message the same, only the messages after the shared bytes are
//! located, decoded, converted and hashed, and the request is the remembered one's fields
//! with the new list. Equal bytes decode to equal values, so the result is a full decode's.
//! Anything else (another head, instructions that changed, a message that does not decode
//! or convert on its own) takes the full decode, whose errors name the exact place.

use std::sync::Arc;

#[cfg(feature = "fuzzing")]
use bytes::Bytes;
use mc_core::{HashChain, HeldBytes, Message};
use mc_wire::WireError;
use mc_wire::chunked_body::ChunkedBody;
use mc_wire::openai::{self, ChatMessage, ChatRequest};

use crate::render_openai::{conversation, prefix_identity};
use mc_wire::lineage::{Lineage, LocatedList};
use mc_wire::list_split::{Split, decode_alone};
use mc_wire::recent_bodies::KnownStart;
use mc_wire::recent_lists::{Listed, RecentLists, held_bytes};

/// A decoded Chat request, and what the next request of its conversation can reuse.
#[derive(Debug)]
pub struct ChatDecoded {
    /// The request.
    pub request: ChatRequest,
    /// The messages after its instructions, in the neutral model.
    pub conversation: Vec<Message>,
    /// Their hash chain.
    pub chain: HashChain,
    /// Where the body's messages lie, for [`RecentChats::remember`]; `None` for a body that
    /// did not split into messages.
    pub layout: Option<ChatLayout>,
}

/// Where a Chat body's messages lie, and its fields outside the message list.
#[derive(Debug, Clone)]
pub struct ChatLayout {
    body: ChunkedBody,
    split: Split,
    /// The request with its message list empty.
    head: Arc<ChatRequest>,
    /// How many leading messages are instructions (system and developer).
    instructions: usize,
    /// What each conversation message holds ([`HeldBytes`]), counted when it was decoded.
    message_bytes: Vec<usize>,
    /// The identity of the instructions and tools, computed once for every request that
    /// repeats them (the bytes outside the list and the instructions).
    prefix_identity: Arc<str>,
    /// The body's identity, and the remembered body it repeats the start of.
    lineage: Lineage,
}

impl ChatLayout {
    /// The identity of the body's instructions and tools.
    pub fn prefix_identity(&self) -> &str {
        &self.prefix_identity
    }

    /// Where the body's message list opens (its `[`).
    pub fn list_open(&self) -> usize {
        self.split.open
    }

    /// How many messages the body has, instructions included.
    pub fn message_count(&self) -> usize {
        self.split.ranges.len()
    }

    /// Whether message `index` (instructions counted) holds the bytes of `other`'s message
    /// `other_index`; `false` when either has no such message.
    pub fn same_message(&self, index: usize, other: &Self, other_index: usize) -> bool {
        self.located()
            .same_entry(index, &other.located(), other_index)
    }

    fn located(&self) -> LocatedList<'_> {
        LocatedList {
            body: &self.body,
            ranges: &self.split.ranges,
            lineage: &self.lineage,
        }
    }

    /// How many leading messages are instructions.
    pub fn instructions(&self) -> usize {
        self.instructions
    }

    /// Whether `other`'s body has this body's bytes outside the message list (the same
    /// model, tools and parameters).
    pub fn same_outside(&self, other: &Self) -> bool {
        self.split
            .same_outside(&self.body, &other.split, &other.body)
    }

    /// What the message places hold (the body is counted by whoever owns it).
    pub fn located_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.split.ranges.capacity() * std::mem::size_of::<std::ops::Range<usize>>()
    }
}

/// A remembered request.
#[derive(Debug)]
struct Entry {
    layout: ChatLayout,
    messages: Vec<ChatMessage>,
    conversation: Vec<Message>,
    chain: HashChain,
}

impl Listed for Entry {
    fn listed(&self) -> (&ChunkedBody, &Split) {
        (&self.layout.body, &self.layout.split)
    }
}

/// Recently managed Chat requests, most recent last, within a byte budget.
#[derive(Debug)]
pub struct RecentChats(RecentLists<Entry>);

impl Default for RecentChats {
    fn default() -> Self {
        Self::new(mc_engine::CacheBudget::default().recent_requests())
    }
}

impl RecentChats {
    /// Remembers requests holding at most `budget_bytes` in all.
    pub fn new(budget_bytes: usize) -> Self {
        Self(RecentLists::new(budget_bytes))
    }

    /// Decodes `body`, reusing what it shares with a remembered request of its
    /// conversation (compared past what `known`, the body's maker, vouches for).
    pub fn decode(
        &self,
        body: &ChunkedBody,
        known: Option<&KnownStart>,
    ) -> Result<ChatDecoded, WireError> {
        match self.decode_incrementally(body, known) {
            Some(decoded) => Ok(decoded),
            None => full_decode(body),
        }
    }

    /// Remembers a managed request (its layout, its `messages` with the instructions, their
    /// neutral forms and chain after the instructions) for the next one of its
    /// conversation.
    pub fn remember(
        &self,
        layout: ChatLayout,
        messages: Vec<ChatMessage>,
        conversation: Vec<Message>,
        chain: HashChain,
    ) {
        if layout.split.ranges.len() != messages.len()
            || messages.len() != layout.instructions + conversation.len()
            || chain.len() != conversation.len()
            || layout.message_bytes.len() != conversation.len()
        {
            return;
        }
        let held = held_bytes(&layout.body, &layout.message_bytes, &chain);
        let entry = Entry {
            layout,
            messages,
            conversation,
            chain,
        };
        self.0.remember(entry, held);
    }

    fn decode_incrementally(
        &self,
        body: &ChunkedBody,
        known: Option<&KnownStart>,
    ) -> Option<ChatDecoded> {
        let (mut entry, split, shared) = self.0.take_extended(body, known)?;
        let instructions = entry.layout.instructions;
        if shared < instructions {
            return None;
        }
        entry.messages.truncate(shared);
        entry.conversation.truncate(shared - instructions);
        entry.chain.truncate(shared - instructions);
        let mut message_bytes = entry.layout.message_bytes;
        message_bytes.truncate(shared - instructions);
        for range in &split.ranges[shared..] {
            let bytes = body.get(range.clone())?;
            let message = decode_alone(&bytes, ChatMessage::decode)?;
            entry.messages.push(message);
        }
        // A new leading instruction (all shared messages were instructions) moves where the
        // conversation starts: decoded whole.
        if entry
            .messages
            .get(instructions)
            .is_some_and(ChatMessage::is_instruction)
        {
            return None;
        }
        for message in &entry.messages[shared..] {
            let converted = openai::to_message(message).ok()?;
            entry.chain.push(converted.content_hash());
            message_bytes.push(converted.held_bytes());
            entry.conversation.push(converted);
        }
        let mut request = ChatRequest::clone(&entry.layout.head);
        request.messages = entry.messages;
        let lineage = Lineage::follows(&entry.layout.lineage, split.bytes_through(shared));
        Some(ChatDecoded {
            request,
            conversation: entry.conversation,
            chain: entry.chain,
            layout: Some(ChatLayout {
                body: body.clone(),
                split,
                head: entry.layout.head,
                instructions,
                message_bytes,
                prefix_identity: entry.layout.prefix_identity,
                lineage,
            }),
        })
    }
}

/// A full decode, with the layout when the body splits into its messages.
fn full_decode(body: &ChunkedBody) -> Result<ChatDecoded, WireError> {
    let whole = body.get(0..body.len()).unwrap_or_default();
    let mut request = ChatRequest::decode(&whole, usize::MAX)?;
    let conversation = conversation(&request)?;
    let chain = HashChain::of(&conversation);
    let layout = Split::scan(&whole)
        .filter(|split| split.ranges.len() == request.messages.len())
        .map(|split| {
            let messages = std::mem::take(&mut request.messages);
            let head = Arc::new(request.clone());
            request.messages = messages;
            ChatLayout {
                body: body.clone(),
                split,
                head,
                instructions: request.instruction_count(),
                message_bytes: conversation.iter().map(HeldBytes::held_bytes).collect(),
                prefix_identity: prefix_identity(&request).into(),
                lineage: Lineage::whole(),
            }
        });
    Ok(ChatDecoded {
        request,
        conversation,
        chain,
        layout,
    })
}

/// Decodes `bodies` in order as the proxy does, remembering each one that decodes with the
/// messages it decoded (as the pass gives them back), and checks every result against a
/// full decode: the same request, conversation and chain, or the same error. Returns the
/// first disagreement. For the fuzz target `chat_incremental_decode` (feature `fuzzing`).
#[cfg(feature = "fuzzing")]
pub fn check_chat_against_full(bodies: &[Bytes]) -> Result<(), String> {
    let recent = RecentChats::default();
    mc_wire::incremental_check::check_sequence(
        bodies,
        |body| recent.decode(&ChunkedBody::from(body.clone()), None),
        |body| full_decode(&ChunkedBody::from(body.clone())),
        |decoded: &ChatDecoded, full| {
            mc_wire::incremental_check::first_difference([
                ("request", decoded.request != full.request),
                ("conversation", decoded.conversation != full.conversation),
                ("chain", decoded.chain != full.chain),
                (
                    "prefix identity",
                    decoded.layout.as_ref().map(ChatLayout::prefix_identity)
                        != full.layout.as_ref().map(ChatLayout::prefix_identity),
                ),
            ])
        },
        |decoded| {
            if let Some(layout) = decoded.layout {
                let messages = decoded.request.messages;
                recent.remember(layout, messages, decoded.conversation, decoded.chain);
            }
        },
    )
}

#[cfg(test)]
#[path = "chat_incremental_tests.rs"]
mod tests;
