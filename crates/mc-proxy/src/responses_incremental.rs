//! Decoding a follow-up Responses request by its new items only, as
//! [`crate::chat_incremental`] does for Chat.
//!
//! A stateless Responses client (OpenCode, Pi, Codex with `store: false`) resends every item
//! on every call, and decoding them, converting them to the neutral model and hashing them
//! was most of a Responses call's cost on a long session. A follow-up repeats the previous
//! request's bytes up to its first new or changed item, and its bytes outside the `input`
//! list when nothing else changed. So with the same bytes outside the list and at least one
//! leading item the same, only the items after the shared bytes are located and decoded,
//! and the request is the remembered one's fields with the new list.
//!
//! Items do not map one to one onto neutral messages: an assistant's items (its message,
//! reasoning, calls) make one message until an item of another role. So the messages kept
//! are those whose items all lie in the shared part and that no new item could extend
//! (every message but the assistant's is one item; an assistant's message is closed when
//! the next message starts among the shared items, and one that ends the kept run is
//! converted again with the items after it). Equal bytes decode to equal values, so the
//! result is a full decode's; anything else takes the full decode, whose errors name the
//! exact place.

use std::sync::Arc;

#[cfg(feature = "fuzzing")]
use bytes::Bytes;
use mc_core::{HashChain, HeldBytes, Message, Role};
use mc_wire::WireError;
use mc_wire::chunked_body::ChunkedBody;
use mc_wire::responses::{self, Input, Item, ResponsesRequest};

use crate::render_responses::{conversation, prefix_identity};
use mc_wire::lineage::{Lineage, LocatedList};
use mc_wire::list_split::{Split, decode_alone};
use mc_wire::recent_bodies::KnownStart;
use mc_wire::recent_lists::{Listed, RecentLists, held_bytes};

/// A decoded Responses request, and what the next request of its conversation can reuse.
#[derive(Debug)]
pub struct ResponsesDecoded {
    /// The request.
    pub request: ResponsesRequest,
    /// The items after its instructions, in the neutral model.
    pub conversation: Vec<Message>,
    /// Their hash chain.
    pub chain: HashChain,
    /// Where the body's items lie and where each message starts, for
    /// [`RecentResponses::remember`]; `None` for a body whose input is not a list of items.
    pub layout: Option<ResponsesLayout>,
}

/// Where a Responses body's items lie, its fields outside the item list, and the item each
/// conversation message starts at.
#[derive(Debug, Clone)]
pub struct ResponsesLayout {
    body: ChunkedBody,
    split: Split,
    /// The request with no input.
    head: Arc<ResponsesRequest>,
    /// How many leading items are instructions.
    instructions: usize,
    /// Per conversation message, the index of its first item after the instructions.
    starts: Vec<usize>,
    /// What each conversation message holds ([`HeldBytes`]), counted when it was decoded.
    message_bytes: Vec<usize>,
    /// The identity of the instructions and tools, computed once for every request that
    /// repeats them (the bytes outside the list and the instructions).
    prefix_identity: Arc<str>,
    /// The body's identity, and the remembered body it repeats the start of.
    lineage: Lineage,
}

impl ResponsesLayout {
    /// Where the body's input list opens (its `[`).
    pub fn list_open(&self) -> usize {
        self.split.open
    }

    /// The identity of the body's instructions and tools.
    pub fn prefix_identity(&self) -> &str {
        &self.prefix_identity
    }

    /// How many items the body has, instructions included.
    pub fn item_count(&self) -> usize {
        self.split.ranges.len()
    }

    /// Whether item `index` (instructions counted) holds the bytes of `other`'s item
    /// `other_index`; `false` when either has no such item.
    pub fn same_item(&self, index: usize, other: &Self, other_index: usize) -> bool {
        self.located()
            .same_entry(index, &other.located(), other_index)
    }

    /// Whether item `index` and everything before it are known, without a compare, to be
    /// `other`'s item `other_index` and everything before it (the incremental decode found
    /// them in the bytes this body shares with that one).
    pub fn knows_same_item(&self, index: usize, other: &Self, other_index: usize) -> bool {
        self.located()
            .knows_same_entry(index, &other.located(), other_index)
    }

    fn located(&self) -> LocatedList<'_> {
        LocatedList {
            body: &self.body,
            ranges: &self.split.ranges,
            lineage: &self.lineage,
        }
    }

    /// How many leading items are instructions.
    pub fn instructions(&self) -> usize {
        self.instructions
    }

    /// Whether `other`'s body has this body's bytes outside the item list (the same
    /// model, instructions, tools and parameters).
    pub fn same_outside(&self, other: &Self) -> bool {
        self.split
            .same_outside(&self.body, &other.split, &other.body)
    }

    /// What the item places hold (the body is counted by whoever owns it).
    pub fn located_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.split.ranges.capacity() * std::mem::size_of::<std::ops::Range<usize>>()
            + (self.starts.capacity() + self.message_bytes.capacity())
                * std::mem::size_of::<usize>()
    }
}

/// A remembered request.
#[derive(Debug)]
struct Entry {
    layout: ResponsesLayout,
    items: Vec<Item>,
    conversation: Vec<Message>,
    chain: HashChain,
}

impl Listed for Entry {
    fn listed(&self) -> (&ChunkedBody, &Split) {
        (&self.layout.body, &self.layout.split)
    }
}

/// Recently managed Responses requests, most recent last, within a byte budget.
#[derive(Debug)]
pub struct RecentResponses(RecentLists<Entry>);

impl Default for RecentResponses {
    fn default() -> Self {
        Self::new(mc_engine::CacheBudget::default().recent_requests())
    }
}

impl RecentResponses {
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
    ) -> Result<ResponsesDecoded, WireError> {
        match self.decode_incrementally(body, known) {
            Some(decoded) => Ok(decoded),
            None => full_decode(body),
        }
    }

    /// Remembers a managed request (its layout, its `items` with the instructions, their
    /// neutral forms and chain after the instructions) for the next one of its
    /// conversation.
    pub fn remember(
        &self,
        layout: ResponsesLayout,
        items: Vec<Item>,
        conversation: Vec<Message>,
        chain: HashChain,
    ) {
        if layout.split.ranges.len() != items.len()
            || layout.starts.len() != conversation.len()
            || chain.len() != conversation.len()
            || layout.message_bytes.len() != conversation.len()
        {
            return;
        }
        let held = held_bytes(&layout.body, &layout.message_bytes, &chain);
        let entry = Entry {
            layout,
            items,
            conversation,
            chain,
        };
        self.0.remember(entry, held);
    }

    fn decode_incrementally(
        &self,
        body: &ChunkedBody,
        known: Option<&KnownStart>,
    ) -> Option<ResponsesDecoded> {
        let (mut entry, split, shared) = self.0.take_extended(body, known)?;
        let instructions = entry.layout.instructions;
        if shared < instructions {
            return None;
        }
        entry.items.truncate(shared);
        for range in &split.ranges[shared..] {
            let bytes = body.get(range.clone())?;
            entry.items.push(decode_alone(&bytes, Item::decode)?);
        }
        // A new leading instruction (all shared items were instructions) moves where the
        // conversation starts: decoded whole.
        let mut request = ResponsesRequest::clone(&entry.layout.head);
        request.input = Some(Input::Items(entry.items));
        if request.instruction_count() != instructions {
            return None;
        }
        let Some(Input::Items(items)) = &request.input else {
            return None;
        };
        let mut starts = entry.layout.starts;
        let resume = kept_messages(&entry.conversation, &mut starts, shared - instructions);
        entry.conversation.truncate(starts.len());
        entry.chain.truncate(starts.len());
        let mut message_bytes = entry.layout.message_bytes;
        message_bytes.truncate(starts.len());
        let (converted, new_starts) =
            responses::to_conversation_with_starts(&items[instructions + resume..]);
        for message in converted {
            entry.chain.push(message.content_hash());
            message_bytes.push(message.held_bytes());
            entry.conversation.push(message);
        }
        starts.extend(new_starts.into_iter().map(|start| start + resume));
        let lineage = Lineage::follows(&entry.layout.lineage, split.bytes_through(shared));
        Some(ResponsesDecoded {
            request,
            conversation: entry.conversation,
            chain: entry.chain,
            layout: Some(ResponsesLayout {
                body: body.clone(),
                split,
                head: entry.layout.head,
                instructions,
                starts,
                message_bytes,
                prefix_identity: entry.layout.prefix_identity,
                lineage,
            }),
        })
    }
}

/// Cuts `starts` to the messages of `conversation` a follow-up sharing its first `shared`
/// conversation items keeps as they are (see the module docs); returns the item index the
/// conversion resumes at.
fn kept_messages(conversation: &[Message], starts: &mut Vec<usize>, shared: usize) -> usize {
    let is_assistant = |index: usize| conversation[index].role == Role::Assistant;
    // Every message but the assistant's is one item; an assistant's ends where the next
    // message starts.
    let complete = |index: usize| {
        (!is_assistant(index) && starts[index] < shared)
            || starts.get(index + 1).is_some_and(|&next| next <= shared)
    };
    let mut kept = (0..conversation.len().min(starts.len()))
        .take_while(|&index| complete(index))
        .count();
    // A kept assistant message at the end could take the new items: converted again.
    if kept > 0 && is_assistant(kept - 1) {
        kept -= 1;
    }
    let resume = starts.get(kept).map_or(shared, |&start| start.min(shared));
    starts.truncate(kept);
    resume
}

/// A full decode, with the layout when the body's input is a list of items.
fn full_decode(body: &ChunkedBody) -> Result<ResponsesDecoded, WireError> {
    let whole = body.get(0..body.len()).unwrap_or_default();
    let mut request = ResponsesRequest::decode(&whole, usize::MAX)?;
    let instructions = request.instruction_count();
    let (conversation, starts, items) = match &request.input {
        Some(Input::Items(items)) => {
            let (conversation, starts) =
                responses::to_conversation_with_starts(&items[instructions..]);
            (conversation, starts, items.len())
        }
        _ => (conversation(&request), Vec::new(), 0),
    };
    let chain = HashChain::of(&conversation);
    let layout = Split::scan_input(&whole)
        .filter(|split| split.ranges.len() == items)
        .map(|split| {
            let input = request.input.take();
            let head = Arc::new(request.clone());
            request.input = input;
            ResponsesLayout {
                body: body.clone(),
                split,
                head,
                instructions,
                starts,
                message_bytes: conversation.iter().map(HeldBytes::held_bytes).collect(),
                prefix_identity: prefix_identity(&request).into(),
                lineage: Lineage::whole(),
            }
        });
    Ok(ResponsesDecoded {
        request,
        conversation,
        chain,
        layout,
    })
}

/// Decodes `bodies` in order as the proxy does, remembering each one that decodes with the
/// items it decoded, and checks every result against a full decode: the same request,
/// conversation, chain and message starts, or the same error. Returns the first
/// disagreement. For the fuzz target `responses_incremental_decode` (feature `fuzzing`).
#[cfg(feature = "fuzzing")]
pub fn check_responses_against_full(bodies: &[Bytes]) -> Result<(), String> {
    let recent = RecentResponses::default();
    let starts = |layout: &Option<ResponsesLayout>| layout.as_ref().map(|l| l.starts.clone());
    mc_wire::incremental_check::check_sequence(
        bodies,
        |body| recent.decode(&ChunkedBody::from(body.clone()), None),
        |body| full_decode(&ChunkedBody::from(body.clone())),
        |decoded: &ResponsesDecoded, full| {
            mc_wire::incremental_check::first_difference([
                ("request", decoded.request != full.request),
                ("conversation", decoded.conversation != full.conversation),
                ("chain", decoded.chain != full.chain),
                (
                    "message starts",
                    starts(&decoded.layout) != starts(&full.layout),
                ),
                (
                    "prefix identity",
                    decoded
                        .layout
                        .as_ref()
                        .map(ResponsesLayout::prefix_identity)
                        != full.layout.as_ref().map(ResponsesLayout::prefix_identity),
                ),
            ])
        },
        |decoded| {
            if let (Some(layout), Some(Input::Items(items))) =
                (decoded.layout, decoded.request.input)
            {
                recent.remember(layout, items, decoded.conversation, decoded.chain);
            }
        },
    )
}

#[cfg(test)]
#[path = "responses_incremental_tests.rs"]
mod tests;
