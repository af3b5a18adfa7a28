//! Decoding a follow-up Anthropic request by its new messages only.
//!
//! Clients resend the whole conversation on every call, and decoding, converting and hashing
//! it was most of a managed call's cost on long sessions. A follow-up repeats the previous
//! request's bytes up to its first new or changed message (a moved `cache_control` marker,
//! an edit, the new turn). So the body is compared with the remembered request's, and only
//! the messages after the shared bytes are located ([`crate::list_split`]); the rest of the request
//! (model, system, tools, parameters) is reused when its bytes equal a remembered request's
//! and decoded otherwise ([`head`]); only messages that differ are decoded and hashed. Equal
//! bytes decode to equal values, so the result is the same as a full decode. A body that
//! does not extend a remembered one is scanned whole first; anything unusual (a syntax
//! error, a message that does not decode, an empty list) takes the full decode, whose error
//! messages name the exact place.

mod head;

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use crate::WireError;
use crate::anthropic::{self, MessagesRequest};
use crate::chunked_body::ChunkedBody;
#[cfg(feature = "fuzzing")]
use bytes::Bytes;
use mc_core::breakpoints::CacheTtlChoice;
use mc_core::{ContentHash, HashChain, HeldBytes, Message};

pub use self::head::Head;
#[cfg(feature = "fuzzing")]
use crate::incremental_check::{check_sequence, first_difference};
use crate::list_split::{Split, decode_alone};
use crate::recent_bodies::{KnownStart, remember_within, take_longest_prefix};

/// A decoded request, and what the next request of its conversation can reuse.
#[derive(Debug)]
pub struct Decoded {
    /// The request with its message list emptied, shared with every request repeating
    /// its bytes outside the message list.
    pub request: Arc<MessagesRequest>,
    /// The conversation in the neutral model.
    pub conversation: Vec<Message>,
    /// Its hash chain.
    pub chain: HashChain,
    /// The client's cache TTL choice, from every marker it sent.
    pub client_ttl: CacheTtlChoice,
    /// The body and where each message lies in it, for [`RecentRequests::remember`].
    pub layout: Layout,
}

/// Where a body's messages lie, which of them carry a client 1-hour marker, and its
/// decoded head.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    body: ChunkedBody,
    ranges: Vec<Range<usize>>,
    one_hour: Vec<bool>,
    /// What each decoded message holds ([`HeldBytes`]), so remembering a request sums the
    /// new messages' figures instead of walking the whole conversation again.
    message_bytes: Vec<usize>,
    head: Option<Arc<Head>>,
}

impl Layout {
    /// The prefix identity of the request (its system prompt and tools, client markers
    /// stripped), computed once for all requests with the same head bytes; `None` after a
    /// full decode, which keeps no head.
    pub fn prefix_identity(&self) -> Option<&str> {
        self.head.as_deref().map(Head::prefix_identity)
    }

    /// The layout of a body whose messages lie at `ranges` and whose head is `head`, for
    /// another remembered walk over the same bodies (the agent tools' preparation).
    pub fn new(body: ChunkedBody, ranges: Vec<Range<usize>>, head: Arc<Head>) -> Self {
        Self {
            body,
            ranges,
            one_hour: Vec::new(),
            message_bytes: Vec::new(),
            head: Some(head),
        }
    }

    /// Where the body's message list opens (its `[`); `None` after a full decode.
    pub fn list_open(&self) -> Option<usize> {
        self.head.as_deref()?.open()
    }

    /// The body.
    pub fn body(&self) -> &ChunkedBody {
        &self.body
    }

    /// Where each of the body's messages lies.
    pub fn ranges(&self) -> &[Range<usize>] {
        &self.ranges
    }

    /// How many leading messages this body and a scanned one share byte for byte.
    pub fn shared_messages(&self, body: &ChunkedBody, ranges: &[Range<usize>]) -> usize {
        shared_messages(self, body, ranges)
    }

    fn message(&self, index: usize) -> Option<std::borrow::Cow<'_, [u8]>> {
        self.body.get(self.ranges.get(index)?.clone())
    }

    /// [`Split::extend`] from this body over `body`, whose first `equal` bytes are this
    /// body's; `None` without a decoded head.
    pub fn extend_split(&self, body: &ChunkedBody, equal: usize) -> Option<(Split, usize)> {
        let open = self.head.as_deref()?.open()?;
        Split::extend(&self.ranges, open, body, equal)
    }

    /// The decoded head, when `body` split at `split` has its bytes.
    pub fn head_matching(&self, body: &ChunkedBody, split: &Split) -> Option<Arc<Head>> {
        self.head
            .as_ref()
            .filter(|head| head.matches(body, split))
            .cloned()
    }
}

/// A remembered request.
#[derive(Debug)]
struct Entry {
    layout: Layout,
    conversation: Vec<Message>,
    chain: HashChain,
    /// What it holds: its body and its decoded messages (the head is shared between
    /// requests and small beside them).
    held_bytes: usize,
}

/// Recently managed Anthropic requests, most recent last, within a byte budget: long
/// sessions send multi-megabyte bodies, and each decodes to about as much again.
#[derive(Debug)]
pub struct RecentRequests {
    recent: Mutex<VecDeque<Entry>>,
    budget_bytes: usize,
}

impl RecentRequests {
    /// Remembers requests holding at most `budget_bytes` in all.
    pub fn new(budget_bytes: usize) -> Self {
        Self {
            recent: Mutex::new(VecDeque::new()),
            budget_bytes,
        }
    }

    /// Decodes `body`, reusing what it shares with a remembered request of its conversation.
    pub fn decode(
        &self,
        body: &ChunkedBody,
        limit_bytes: usize,
        known: Option<&KnownStart>,
    ) -> Result<Decoded, WireError> {
        match self.decode_incrementally(body, limit_bytes, known) {
            Some(decoded) => Ok(decoded),
            None => full_decode(body, limit_bytes),
        }
    }

    /// Remembers a managed request for the next one of its conversation.
    pub fn remember(&self, layout: Layout, conversation: Vec<Message>, chain: HashChain) {
        if layout.ranges.is_empty()
            || layout.head.is_none()
            || layout.ranges.len() != conversation.len()
            || chain.len() != conversation.len()
        {
            return;
        }
        let messages_bytes = if layout.message_bytes.len() == conversation.len() {
            layout.message_bytes.iter().sum::<usize>()
        } else {
            conversation
                .iter()
                .map(HeldBytes::held_bytes)
                .sum::<usize>()
        };
        let held_bytes = layout.body.len()
            + layout.ranges.capacity() * std::mem::size_of::<Range<usize>>()
            + messages_bytes
            + chain.len() * std::mem::size_of::<ContentHash>();
        if held_bytes > self.budget_bytes {
            return;
        }
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = Entry {
            layout,
            conversation,
            chain,
            held_bytes,
        };
        remember_within(&mut recent, entry, self.budget_bytes, |entry| {
            entry.held_bytes
        });
    }

    fn decode_incrementally(
        &self,
        body: &ChunkedBody,
        limit_bytes: usize,
        known: Option<&KnownStart>,
    ) -> Option<Decoded> {
        if body.len() > limit_bytes {
            return None;
        }
        let (split, head, entry, shared) = self.locate(body, limit_bytes, known)?;
        let (mut conversation, mut chain, mut one_hour, mut message_bytes) = match entry {
            Some(mut entry) => {
                entry.conversation.truncate(shared);
                entry.chain.truncate(shared);
                entry.layout.one_hour.truncate(shared);
                entry.layout.message_bytes.truncate(shared);
                (
                    entry.conversation,
                    entry.chain,
                    entry.layout.one_hour,
                    entry.layout.message_bytes,
                )
            }
            None => (Vec::new(), HashChain::default(), Vec::new(), Vec::new()),
        };
        let mut layout = Layout {
            body: body.clone(),
            ranges: split.ranges,
            one_hour: Vec::new(),
            message_bytes: Vec::new(),
            head: None,
        };
        for index in shared..layout.ranges.len() {
            let bytes = layout.message(index)?;
            let wire: anthropic::Message = decode_alone(&bytes, serde_json::from_slice)?;
            one_hour.push(anthropic::uses_one_hour(&wire));
            let message = anthropic::into_message(wire);
            chain.push(message.content_hash());
            message_bytes.push(message.held_bytes());
            conversation.push(message);
        }
        let client_ttl = if head.one_hour || one_hour.contains(&true) {
            CacheTtlChoice::OneHour
        } else {
            CacheTtlChoice::Default
        };
        let request = head.request();
        layout.one_hour = one_hour;
        layout.message_bytes = message_bytes;
        layout.head = Some(head);
        Some(Decoded {
            request,
            conversation,
            chain,
            client_ttl,
            layout,
        })
    }

    /// Locates the messages of `body` and its head, and takes out the remembered request it
    /// shares most leading messages with, with their count. A body extending a remembered
    /// one is trusted past the shared bytes only when its head matches a remembered head
    /// (see [`head`]); otherwise it is scanned whole.
    fn locate(
        &self,
        body: &ChunkedBody,
        limit_bytes: usize,
        known: Option<&KnownStart>,
    ) -> Option<(Split, Arc<Head>, Option<Entry>, usize)> {
        let (entry, equal) = self.take_longest_prefix(body, known).unzip();
        if let (Some(extended), Some(equal)) = (&entry, equal)
            && let Some((split, shared)) = extended.layout.extend_split(body, equal)
            && let Some(head) = self.remembered_head(body, &split, Some(extended))
        {
            return Some((split, head, entry, shared));
        }
        // A body that extends none is read in one piece (a client's body is one already).
        let whole = body.get(0..body.len())?;
        let split = Split::scan(&whole)?;
        let (entry, shared) = match entry {
            Some(entry) => {
                let shared = shared_messages(&entry.layout, body, &split.ranges);
                (Some(entry), shared)
            }
            None => self.take_best(body, &split.ranges),
        };
        let head = match self.remembered_head(body, &split, entry.as_ref()) {
            Some(head) => head,
            None => Arc::new(Head::decode(&whole, &split, limit_bytes)?),
        };
        Some((split, head, entry, shared))
    }

    /// A remembered head with the bytes of `body`'s, `entry`'s first.
    fn remembered_head(
        &self,
        body: &ChunkedBody,
        split: &Split,
        entry: Option<&Entry>,
    ) -> Option<Arc<Head>> {
        if let Some(head) = entry.and_then(|entry| entry.layout.head_matching(body, split)) {
            return Some(head);
        }
        let recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        recent
            .iter()
            .rev()
            .find_map(|entry| entry.layout.head_matching(body, split))
    }

    /// [`take_longest_prefix`] among the remembered requests, compared past what `known`
    /// vouches for.
    fn take_longest_prefix(
        &self,
        body: &ChunkedBody,
        known: Option<&KnownStart>,
    ) -> Option<(Entry, usize)> {
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        take_longest_prefix(&mut recent, body, known, |entry| {
            (&entry.layout.body, &entry.layout.ranges)
        })
    }

    /// Takes out the remembered request sharing the longest message prefix with a scanned
    /// body, and the count.
    fn take_best(&self, body: &ChunkedBody, ranges: &[Range<usize>]) -> (Option<Entry>, usize) {
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        let first = ranges.first().and_then(|range| body.get(range.clone()));
        let best = recent
            .iter()
            .enumerate()
            .filter(|(_, entry)| first.is_some() && entry.layout.message(0) == first)
            .map(|(position, entry)| (shared_messages(&entry.layout, body, ranges), position))
            .max();
        match best {
            Some((shared, position)) => (recent.remove(position), shared),
            None => (None, 0),
        }
    }
}

/// A full decode: the request, its conversation and chain, and its layout left empty (a
/// request that needed it is not remembered).
fn full_decode(body: &ChunkedBody, limit_bytes: usize) -> Result<Decoded, WireError> {
    let whole = body.get(0..body.len()).unwrap_or_default();
    let mut request = MessagesRequest::decode(&whole, limit_bytes)?;
    let client_ttl = anthropic::client_ttl(&request);
    let conversation = anthropic::into_conversation(std::mem::take(&mut request.messages));
    let chain = HashChain::of(&conversation);
    Ok(Decoded {
        request: Arc::new(request),
        conversation,
        chain,
        client_ttl,
        layout: Layout::default(),
    })
}

/// How many leading messages a remembered body and a scanned one share byte for byte.
fn shared_messages(remembered: &Layout, body: &ChunkedBody, ranges: &[Range<usize>]) -> usize {
    ranges
        .iter()
        .enumerate()
        .take_while(|(index, range)| remembered.message(*index) == body.get((*range).clone()))
        .count()
}

/// What [`check_against_full`] remembers: enough for every request of a fuzz case.
#[cfg(feature = "fuzzing")]
const CHECK_BUDGET_BYTES: usize = 256 << 20;

/// Decodes `bodies` in order as the proxy does, remembering each one that decodes, and
/// checks every result against a full decode: the same request, conversation, chain, TTL
/// choice and prefix identity, or the same error. Returns the first disagreement. For the
/// fuzz target `incremental_decode` (feature `fuzzing`).
#[cfg(feature = "fuzzing")]
pub fn check_against_full(bodies: &[Bytes], limit_bytes: usize) -> Result<(), String> {
    let recent = RecentRequests::new(CHECK_BUDGET_BYTES);
    check_sequence(
        bodies,
        |body| recent.decode(&ChunkedBody::from(body.clone()), limit_bytes, None),
        |body| full_decode(&ChunkedBody::from(body.clone()), limit_bytes),
        |decoded: &Decoded, full| {
            let identity_differs = decoded.layout.prefix_identity().is_some_and(|identity| {
                let mut request = (*full.request).clone();
                anthropic::strip_client_markers(&mut request);
                identity != anthropic::prefix_identity(&request)
            });
            first_difference([
                ("request", decoded.request != full.request),
                ("conversation", decoded.conversation != full.conversation),
                ("chain", decoded.chain != full.chain),
                ("client TTL", decoded.client_ttl != full.client_ttl),
                ("prefix identity", identity_differs),
            ])
        },
        |decoded| recent.remember(decoded.layout, decoded.conversation, decoded.chain),
    )
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
