//! The upstream Chat Completions body of a pass, written from the session's previous one
//! where the messages did not change.
//!
//! A Chat pass renders each neutral message the engine returns into its Chat messages, gives
//! each the fields the client sent on the message it stands for ([`render_openai`]), and
//! encodes the whole list again: on a long session that was most of a Chat pass. A message's
//! bytes depend on two things only: the neutral message (the engine returns the very same
//! shared message for each tail message it rendered as before, so identity, `Arc::ptr_eq`,
//! says it is unchanged; the kept `Arc` holds the allocation, so its address is not reused)
//! and the client message it is paired with (by distance from the end of the list). So a
//! message is shared with the previous body ([`crate::list_writer`]) when it is the same message at the same index
//! of the engine's list and each of its Chat messages pairs with a client message of the same
//! bytes as the one it paired with then (or with none, as then): a list that shrank or grew
//! at its front still reuses what pairs as before. Anything else is rendered and encoded
//! afresh, and the result is byte for byte what rendering the whole request gives (a
//! property test checks).
//!
//! [`render_openai`]: crate::render_openai

use std::ops::Range;
use std::sync::Arc;

use mc_core::Message;
use mc_wire::openai::{self, ChatMessage, ChatRequest};

use crate::chat_incremental::ChatLayout;
use crate::chunked_body::ChunkedBody;
use crate::list_writer::{Around, ListWriter};
use crate::render_openai::same_message;

/// A session's last upstream Chat body, and where each rendered message lies in it.
#[derive(Debug)]
pub struct EncodedChat {
    /// The upstream body.
    body: ChunkedBody,
    /// The client body it was rendered for, to compare the client's messages with.
    client: ChatLayout,
    /// The client's conversation messages less the rendered ones.
    offset: isize,
    /// Where the message list lies in the body.
    around: Around,
    /// Per neutral message, in order.
    kept: Vec<Kept>,
}

/// One neutral message's Chat messages in an encoded body.
#[derive(Debug)]
struct Kept {
    message: Arc<Message>,
    /// The index of its first Chat message in the rendered conversation.
    first: usize,
    /// How many Chat messages it became.
    count: usize,
    /// Their bytes, joined by commas, in the body.
    range: Range<usize>,
}

/// A rendered upstream request.
#[derive(Debug)]
pub struct ChatRendered {
    /// The upstream body.
    pub body: ChunkedBody,
    /// The proxy asked for the stream's usage chunk where the client did not.
    pub added_usage: bool,
    /// The client's messages as it sent them, instructions first, for its next request.
    pub client_messages: Vec<ChatMessage>,
    /// The body for the session's next pass to reuse; `None` when the client body's
    /// messages were not located.
    pub encoded: Option<EncodedChat>,
}

/// The upstream request for a pass: the client's instructions as sent, then the pass's
/// conversation (`messages`, as the engine returned them), each message with the client's fields where it says what the client's
/// said; a streamed request asks for the usage chunk (OpenAI streams report no usage
/// otherwise, and the engine plans on reported usage). `layout` locates `request`'s
/// messages in the client body; with it, what `previous` encoded is reused, its records
/// moved into the new one (each holds its message: cloning them cost every pass a cache miss
/// per message).
pub fn render(
    mut request: ChatRequest,
    messages: &[Arc<Message>],
    layout: Option<&ChatLayout>,
    previous: Option<EncodedChat>,
) -> ChatRendered {
    let keep = request.instruction_count();
    // Borrowed in two, not split: on a long session moving the messages was a copy of the
    // whole list, twice a pass. The encoding around the list does not read them.
    let client_messages = std::mem::take(&mut request.messages);
    let (instructions, client) = client_messages.split_at(keep.min(client_messages.len()));
    let added_usage = request.is_stream() && !request.includes_stream_usage();
    if added_usage {
        request.set_stream_usage(true);
    }
    let layout = layout.filter(|layout| layout.message_count() == keep + client.len());
    let (previous, then) = match previous.filter(|_| layout.is_some()) {
        Some(mut previous) => {
            let then = std::mem::take(&mut previous.kept);
            (Some(previous), then)
        }
        None => (None, Vec::new()),
    };
    let previous = previous.as_ref();
    let renderings: Vec<Rendering> = messages
        .iter()
        .enumerate()
        .map(
            |(index, message)| match then.get(index).and_then(|was| was.same_as(message)) {
                Some(count) => Rendering::Same { count },
                None => Rendering::Fresh(openai::from_message(message)),
            },
        )
        .collect();
    let rendered_len: usize = renderings.iter().map(Rendering::count).sum();
    let pairing = Pairing {
        client,
        offset: client.len() as isize - rendered_len as isize,
        layout,
    };

    let same_outside = previous
        .zip(layout)
        .filter(|(previous, layout)| previous.client.same_outside(layout))
        .map(|(previous, _)| (&previous.body, previous.around));
    let (before, after) = Around::reuse_or(same_outside, || request.encode_around_messages());
    let mut list = ListWriter::open(before);
    for instruction in instructions {
        list.write(instruction);
    }
    let kept = write_conversation(&mut list, messages, renderings, &pairing, previous, then);
    let (body, around) = list.close(after);
    let encoded = layout.map(|layout| EncodedChat {
        body: body.clone(),
        client: layout.clone(),
        offset: pairing.offset,
        around,
        kept,
    });
    ChatRendered {
        body,
        added_usage,
        client_messages,
        encoded,
    }
}

/// Writes the conversation's messages into `list`, each shared with `previous` (the last
/// pass's body, with `then`, its records) where that gives its bytes, else rendered now;
/// returns where each went. The records are written over `then` in place, and a record
/// that stays is not even written when its bytes keep their place (a new list of them, each
/// holding a clone of its message, cost every pass a write of fresh memory and a cache miss
/// per message).
fn write_conversation<'a>(
    list: &mut ListWriter<'a>,
    messages: &[Arc<Message>],
    renderings: Vec<Rendering>,
    pairing: &Pairing<'_>,
    previous: Option<&'a EncodedChat>,
    then: Vec<Kept>,
) -> Vec<Kept> {
    let mut kept = then;
    let mut first = 0;
    for (index, (message, rendering)) in messages.iter().zip(renderings).enumerate() {
        let count = rendering.count();
        let was = kept.get(index);
        let reused = match (previous, was, &rendering) {
            (Some(previous), Some(was), Rendering::Same { .. }) => {
                previous.reusable(was, first, pairing)
            }
            _ => None,
        };
        let range = match (reused, rendering) {
            (Some((body, range)), _) => list.share(body, range),
            (None, Rendering::Fresh(chat)) => write_fresh(list, chat, first, pairing),
            (None, Rendering::Same { .. }) => {
                write_fresh(list, openai::from_message(message), first, pairing)
            }
        };
        match kept.get_mut(index) {
            Some(slot) if Arc::ptr_eq(&slot.message, message) => {
                if (slot.first, slot.count, &slot.range) != (first, count, &range) {
                    (slot.first, slot.count, slot.range) = (first, count, range);
                }
            }
            slot => {
                let now = Kept {
                    message: Arc::clone(message),
                    first,
                    count,
                    range,
                };
                match slot {
                    Some(slot) => *slot = now,
                    None => kept.push(now),
                }
            }
        }
        first += count;
    }
    kept.truncate(messages.len());
    kept
}

/// Writes one neutral message's Chat messages (the first at rendered index `first`), each
/// with its client message's fields when it says what that one said; returns where they
/// went.
fn write_fresh(
    list: &mut ListWriter<'_>,
    mut chat: Vec<ChatMessage>,
    first: usize,
    pairing: &Pairing<'_>,
) -> Range<usize> {
    let mut start = None;
    for (at, rendered) in chat.iter_mut().enumerate() {
        if let Some(theirs) = pairing.client_message(first + at)
            && same_message(rendered, theirs)
        {
            rendered.adopt_client_fields(theirs);
        }
        start.get_or_insert(list.write(rendered));
    }
    start.unwrap_or(list.len())..list.len()
}

/// How a neutral message is rendered on this pass.
enum Rendering {
    /// The previous pass's message at the same index, which became `count` Chat messages.
    Same { count: usize },
    /// Another message, as its Chat messages.
    Fresh(Vec<ChatMessage>),
}

impl Rendering {
    fn count(&self) -> usize {
        match self {
            Self::Same { count } => *count,
            Self::Fresh(chat) => chat.len(),
        }
    }
}

/// Which client message each rendered one is paired with: the one as far from the end.
struct Pairing<'a> {
    client: &'a [ChatMessage],
    offset: isize,
    layout: Option<&'a ChatLayout>,
}

impl Pairing<'_> {
    /// The client message paired with rendered conversation message `at`.
    fn client_message(&self, at: usize) -> Option<&ChatMessage> {
        let index = usize::try_from(at as isize + self.offset).ok()?;
        self.client.get(index)
    }
}

impl Kept {
    /// How many Chat messages it became, when it holds `message` itself.
    fn same_as(&self, message: &Arc<Message>) -> Option<usize> {
        Arc::ptr_eq(&self.message, message).then_some(self.count)
    }
}

impl EncodedChat {
    /// The previous bytes of a message of the last pass (`kept`, its record; the same
    /// message, checked by the caller, now at rendered index `first`), when they are what
    /// rendering it now gives: each of its Chat messages pairs with a client message of the
    /// same bytes as the one it paired with then, or with none, as then.
    fn reusable(
        &self,
        kept: &Kept,
        first: usize,
        pairing: &Pairing<'_>,
    ) -> Option<(&ChunkedBody, Range<usize>)> {
        let layout = pairing.layout?;
        for at in 0..kept.count {
            let now = paired_index(layout, first + at, pairing.offset);
            let then = paired_index(&self.client, kept.first + at, self.offset);
            let same = match (now, then) {
                (Some(now), Some(then)) => layout.same_message(now, &self.client, then),
                (now, then) => now.is_none() && then.is_none(),
            };
            if !same {
                return None;
            }
        }
        (kept.range.end <= self.body.len()).then(|| (&self.body, kept.range.clone()))
    }
}

/// The index (instructions counted) of the client message in `layout` that rendered
/// conversation message `at` pairs with when the rendered list is `offset` messages shorter
/// than the client's; `None` for none.
fn paired_index(layout: &ChatLayout, at: usize, offset: isize) -> Option<usize> {
    let index = layout.instructions() + usize::try_from(at as isize + offset).ok()?;
    (index < layout.message_count()).then_some(index)
}

impl mc_core::HeldBytes for EncodedChat {
    /// The body, the client body's message places (the body itself is the remembered
    /// request's) and one slot per message (the messages belong to the engine's rendered tail).
    fn held_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.body.len()
            + self.client.located_bytes()
            + self.kept.capacity() * std::mem::size_of::<Kept>()
    }
}

#[cfg(test)]
#[path = "encoded_chat_tests.rs"]
mod tests;
