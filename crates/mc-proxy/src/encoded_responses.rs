//! The upstream Responses body of a pass, written from the session's previous one where the
//! messages did not change, as [`crate::encoded_chat`] does for Chat.
//!
//! What a neutral message's items encode to depends on the message, on which of the
//! conversation's calls are custom tools' (an output answers a custom call as a custom
//! output), on the request's tools, and on the client item each rendered item takes its
//! fields from ([`crate::render_responses`]: a message item pairs with the client's message
//! item as far from the end, a call or an output with the client's item of the same call
//! id). So a message's bytes are shared with the previous body ([`crate::list_writer`]) when it is the same message
//! (`Arc::ptr_eq`) at the same index, the client body has the same bytes outside its item
//! list, none of its outputs answers a call whose custom kind changed, and every item pairs
//! with a client item of the same bytes as before (or with none, as before). The result is
//! byte for byte what rendering the whole request gives (a property test checks).

use std::cell::{Cell, OnceCell};
use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;

use mc_core::{Message, Part};
use mc_wire::responses::{Input, Item, ItemRenderer, ResponsesRequest};

use crate::chunked_body::ChunkedBody;
use crate::list_writer::{Around, ListWriter};
use crate::render_responses::says_the_same;
use crate::responses_incremental::ResponsesLayout;

/// A session's last upstream Responses body, and where each rendered message lies in it.
#[derive(Debug)]
pub struct EncodedResponses {
    body: ChunkedBody,
    /// The client body it was rendered for.
    client: ResponsesLayout,
    /// The conversation's custom tool calls then.
    custom_calls: HashSet<String>,
    /// Where the item list lies in the body.
    around: Around,
    /// Per neutral message, in order.
    kept: Vec<Kept>,
}

/// One neutral message's items in an encoded body.
#[derive(Debug)]
struct Kept {
    message: Arc<Message>,
    /// What each of its items pairs by.
    shapes: Arc<[Shape]>,
    /// The client item (index after the instructions) each item paired with.
    paired: Vec<Option<usize>>,
    /// Their bytes, joined by commas, in the body.
    range: Range<usize>,
}

/// What a rendered item is paired with a client item by.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Shape {
    /// A message item: by its distance from the end among the message items.
    Message,
    /// A call or an output: by its type and call id.
    Call(String, String),
    /// Anything else: by nothing.
    Unpaired,
}

impl Shape {
    fn of(item: &Item) -> Self {
        match (item, item.call_id()) {
            (Item::Message(_), _) => Self::Message,
            (_, Some(call_id)) => Self::Call(item.type_name().to_owned(), call_id.to_owned()),
            (_, None) => Self::Unpaired,
        }
    }
}

/// A rendered upstream request.
#[derive(Debug)]
pub struct ResponsesRendered {
    /// The upstream body.
    pub body: ChunkedBody,
    /// The client's items as it sent them, instructions first, for its next request.
    pub client_items: Vec<Item>,
    /// The body for the session's next pass to reuse; `None` when the client body's items
    /// were not located.
    pub encoded: Option<EncodedResponses>,
}

/// The upstream request for a pass: the client's instructions as sent, then the pass's
/// conversation (`messages`, as the engine returned them) as items, each with the client's
/// fields where it stands for a client item. `layout` locates `request`'s items in the
/// client body; with it, what `previous` encoded is reused, its records written over in
/// place (each holds its message: cloning them cost every pass a cache miss per message).
pub fn render(
    mut request: ResponsesRequest,
    messages: &[Arc<Message>],
    layout: Option<&ResponsesLayout>,
    previous: Option<EncodedResponses>,
) -> ResponsesRendered {
    let keep = request.instruction_count();
    // Borrowed in two, not split: on a long session moving the items was a copy of the
    // whole list, twice a pass.
    let client_items = match request.input.take() {
        Some(Input::Items(items)) => items,
        Some(Input::Text(_)) | None => Vec::new(),
    };
    let (instructions, client) = client_items.split_at(keep.min(client_items.len()));
    let layout = layout.filter(|layout| layout.item_count() == keep + client.len());
    let (previous, then) = match previous.zip(layout) {
        Some((mut previous, layout)) if previous.client.same_outside(layout) => {
            let then = std::mem::take(&mut previous.kept);
            (Some(previous), then)
        }
        _ => (None, Vec::new()),
    };
    let previous = previous.as_ref();
    let reusing = previous.zip(layout);
    // Read once: looking each call's tool up in the tools' JSON cost every pass a walk of
    // the whole conversation. Without custom tools no call is a custom one.
    let custom_tools: Vec<String> = request
        .tools
        .iter()
        .flatten()
        .filter(|tool| tool.is_custom())
        .filter_map(|tool| tool.name().map(str::to_owned))
        .collect();
    let with_custom_calls = if custom_tools.is_empty() {
        &[]
    } else {
        messages
    };
    let renderer = ItemRenderer::new(with_custom_calls.iter().map(|message| &**message), |name| {
        custom_tools.iter().any(|tool| tool == name)
    });
    let changed_kinds: HashSet<&String> = previous.map_or_else(HashSet::new, |previous| {
        renderer
            .custom_calls()
            .symmetric_difference(&previous.custom_calls)
            .collect()
    });
    let render = |message: &Message| renderer.render(message);
    let renderings = renderings(messages, &then, &changed_kinds, &render);
    let pairing = Pairing::new(client, &renderings);

    let written = previous.map(|previous| (&previous.body, previous.around));
    let (before, after) = Around::reuse_or(written, || {
        request.input = Some(Input::Items(Vec::new()));
        request.encode_around_input()
    });
    let mut list = ListWriter::open(before);
    for instruction in instructions {
        list.write(instruction);
    }
    let kept = write_conversation(
        &mut list, messages, renderings, &render, &pairing, reusing, then,
    );
    let (body, around) = list.close(after);
    let encoded = layout.map(|layout| EncodedResponses {
        body: body.clone(),
        client: layout.clone(),
        custom_calls: renderer.into_custom_calls(),
        around,
        kept,
    });
    ResponsesRendered {
        body,
        client_items,
        encoded,
    }
}

/// How each of `messages` is rendered: as on the previous pass (`then`, its records) when it
/// is the same message at the same index and answers none of the calls whose custom kind
/// changed (`changed_kinds`), else by `render` now.
fn renderings(
    messages: &[Arc<Message>],
    then: &[Kept],
    changed_kinds: &HashSet<&String>,
    render: &dyn Fn(&Message) -> Vec<Item>,
) -> Vec<Rendering> {
    messages
        .iter()
        .enumerate()
        .map(|(index, message)| {
            let same = then
                .get(index)
                .and_then(|was| was.same_as(message))
                .filter(|_| !answers_any(message, changed_kinds));
            match same {
                Some(shapes) => Rendering::Same(Arc::clone(shapes)),
                None => Rendering::Fresh(render(message)),
            }
        })
        .collect()
}

/// Whether `message` holds an output answering one of `calls`.
fn answers_any(message: &Message, calls: &HashSet<&String>) -> bool {
    !calls.is_empty()
        && message
            .parts
            .iter()
            .any(|part| matches!(part, Part::ToolResult { call_id, .. } if calls.contains(call_id)))
}

/// Writes the conversation's items into `list`, each message's shared with `previous` (the
/// last pass's body, with `then`, its records) where that gives its bytes, else rendered now;
/// returns where each went. The records are written over `then` in place, and one that stays
/// is not even written when its bytes keep their place (a new list of them cost every pass a
/// write of fresh memory per message).
fn write_conversation<'a>(
    list: &mut ListWriter<'a>,
    messages: &[Arc<Message>],
    renderings: Vec<Rendering>,
    render: &dyn Fn(&Message) -> Vec<Item>,
    pairing: &Pairing<'_>,
    previous: Option<(&'a EncodedResponses, &ResponsesLayout)>,
    then: Vec<Kept>,
) -> Vec<Kept> {
    let mut kept = then;
    let mut message_items = 0;
    for (index, (message, rendering)) in messages.iter().zip(renderings).enumerate() {
        let (items, shapes) = match rendering {
            Rendering::Same(shapes) => (None, shapes),
            Rendering::Fresh(items) => {
                let shapes = items.iter().map(Shape::of).collect();
                (Some(items), shapes)
            }
        };
        let same = previous.filter(|_| items.is_none());
        // The common case, a message of the previous pass that pairs as it did: its record
        // stays and its bytes are shared, nothing paired, allocated or compared.
        let was = kept.get(index);
        let unchanged = match (same, was) {
            (Some((previous, layout)), Some(was))
                if previous.unchanged(was, message_items, pairing, layout) =>
            {
                previous.kept_bytes(was)
            }
            _ => None,
        };
        if let Some((body, range)) = unchanged {
            message_items += message_item_count(&shapes);
            let range = list.share(body, range);
            if kept[index].range != range {
                kept[index].range = range;
            }
            continue;
        }
        // A message rendered as before pairs its calls as before when the client items they
        // paired with lie, unchanged, in the bytes the body shares with the previous one.
        let hint = same.zip(was).map(|((previous, layout), was)| Hint {
            then: &was.paired,
            now: layout,
            was: &previous.client,
        });
        let paired = pairing.pair(&shapes, message_items, hint);
        message_items += message_item_count(&shapes);
        let reused = same
            .zip(was)
            .and_then(|((previous, layout), was)| previous.reusable(was, &paired, layout));
        let range = match reused {
            Some((body, range)) => list.share(body, range),
            None => {
                let items = items.unwrap_or_else(|| render(message));
                write_fresh(list, items, &paired, pairing.client)
            }
        };
        let now = Kept {
            message: Arc::clone(message),
            shapes,
            paired,
            range,
        };
        match kept.get_mut(index) {
            Some(slot) => *slot = now,
            None => kept.push(now),
        }
    }
    kept.truncate(messages.len());
    kept
}

/// How many of `shapes` are message items.
fn message_item_count(shapes: &[Shape]) -> usize {
    shapes
        .iter()
        .filter(|shape| **shape == Shape::Message)
        .count()
}

/// Writes one message's items, each with the fields of the client item it pairs with when
/// it stands for that item; returns where they went.
fn write_fresh(
    list: &mut ListWriter<'_>,
    mut items: Vec<Item>,
    paired: &[Option<usize>],
    client: &[Item],
) -> Range<usize> {
    let mut start = None;
    for (item, paired) in items.iter_mut().zip(paired) {
        if let Some(theirs) = paired.and_then(|at| client.get(at))
            && stands_for(item, theirs)
        {
            item.adopt_client_fields(theirs);
        }
        start.get_or_insert(list.write(item));
    }
    start.unwrap_or(list.len())..list.len()
}

/// Whether a rendered item stands for the client item it pairs with: a message that says
/// what the client's said, or any call or output (paired by its call id).
fn stands_for(ours: &Item, theirs: &Item) -> bool {
    match (ours, theirs) {
        (Item::Message(ours), Item::Message(theirs)) => says_the_same(ours, theirs),
        (Item::Message(_), _) => false,
        _ => true,
    }
}

/// How a neutral message is rendered on this pass.
enum Rendering {
    /// The previous pass's message at the same index: its items' shapes.
    Same(Arc<[Shape]>),
    /// Another message, as its items.
    Fresh(Vec<Item>),
}

impl Rendering {
    /// How many of its items are message items.
    fn message_items(&self) -> usize {
        match self {
            Self::Same(shapes) => message_item_count(shapes),
            Self::Fresh(items) => items
                .iter()
                .filter(|item| matches!(item, Item::Message(_)))
                .count(),
        }
    }
}

/// How many calls a pass pairs by scanning the client items before it indexes them: a
/// scan compares call ids without hashing or allocating, so a few of them cost less than
/// indexing a long session's every item.
const SCANS_BEFORE_MAP: usize = 8;

/// Which client item each rendered item is paired with.
struct Pairing<'a> {
    client: &'a [Item],
    /// The client's message items, by index.
    client_messages: Vec<usize>,
    /// Per type and call id, the first client item with them; made once more than
    /// [`SCANS_BEFORE_MAP`] calls were paired by it (hashing every call id of a long
    /// session on every pass was a cost that grew with it, and most passes pair their calls
    /// from the previous pass and the few new ones by a scan).
    by_call: OnceCell<foldhash::HashMap<(&'a str, &'a str), usize>>,
    /// How many calls were paired by a scan of the client items.
    scans: Cell<usize>,
    /// The client's message items less the rendered ones.
    offset: isize,
}

impl<'a> Pairing<'a> {
    fn new(client: &'a [Item], renderings: &[Rendering]) -> Self {
        let client_messages: Vec<usize> = client
            .iter()
            .enumerate()
            .filter(|(_, item)| matches!(item, Item::Message(_)))
            .map(|(at, _)| at)
            .collect();
        let rendered_messages: usize = renderings.iter().map(Rendering::message_items).sum();
        Self {
            client,
            offset: client_messages.len() as isize - rendered_messages as isize,
            client_messages,
            by_call: OnceCell::new(),
            scans: Cell::new(0),
        }
    }

    /// The first client item of type `kind` answering or making call `call_id`.
    fn by_call(&self, kind: &str, call_id: &str) -> Option<usize> {
        if self.by_call.get().is_none() && self.scans.get() < SCANS_BEFORE_MAP {
            self.scans.set(self.scans.get() + 1);
            return self
                .client
                .iter()
                .position(|item| item.call_id() == Some(call_id) && item.type_name() == kind);
        }
        let by_call = self.by_call.get_or_init(|| {
            let mut by_call =
                foldhash::HashMap::with_capacity_and_hasher(self.client.len(), Default::default());
            for (at, item) in self.client.iter().enumerate() {
                if let Some(call_id) = item.call_id() {
                    by_call.entry((item.type_name(), call_id)).or_insert(at);
                }
            }
            by_call
        });
        by_call.get(&(kind, call_id)).copied()
    }

    /// The client item the rendered list's message item number `n` pairs with: the client's
    /// message item as far from the end.
    fn message_item(&self, n: usize) -> Option<usize> {
        let at = n as isize + self.offset;
        usize::try_from(at)
            .ok()
            .and_then(|at| self.client_messages.get(at).copied())
    }

    /// The client item each of a message's items pairs with; its first message item is the
    /// rendered list's message item number `message_items`. `hint` is how the same message
    /// paired on the previous pass.
    fn pair(
        &self,
        shapes: &[Shape],
        message_items: usize,
        hint: Option<Hint<'_>>,
    ) -> Vec<Option<usize>> {
        let mut next_message = message_items;
        shapes
            .iter()
            .enumerate()
            .map(|(at, shape)| match shape {
                Shape::Message => {
                    next_message += 1;
                    self.message_item(next_message - 1)
                }
                Shape::Call(kind, call_id) => hint
                    .and_then(|hint| hint.still_first(at))
                    .or_else(|| self.by_call(kind, call_id)),
                Shape::Unpaired => None,
            })
            .collect()
    }
}

/// How a message rendered as on the previous pass paired then, and the two client bodies.
#[derive(Clone, Copy)]
struct Hint<'h> {
    /// The client item (after the instructions) each of its items paired with.
    then: &'h [Option<usize>],
    now: &'h ResponsesLayout,
    was: &'h ResponsesLayout,
}

impl Hint<'_> {
    /// The client item item `at` paired with, when it is known to be the same now with
    /// every item before it (the bytes the two bodies share): the first item with its call
    /// id then, it is still the first.
    fn still_first(&self, at: usize) -> Option<usize> {
        let then = (*self.then.get(at)?)?;
        self.now
            .knows_same_item(
                self.now.instructions() + then,
                self.was,
                self.was.instructions() + then,
            )
            .then_some(then)
    }
}

impl EncodedResponses {
    /// Whether a message of the last pass (`kept`, its record; the same message, checked by
    /// the caller) whose first message item is now the rendered list's number
    /// `first_message_item` pairs each of its items as then with a client item the
    /// incremental decode found in the bytes the two client bodies share: what pairing it
    /// again and [`Self::reusable`] would find, known without pairing or comparing anything.
    fn unchanged(
        &self,
        kept: &Kept,
        first_message_item: usize,
        pairing: &Pairing<'_>,
        layout: &ResponsesLayout,
    ) -> bool {
        let known = |then: usize| {
            layout.knows_same_item(
                layout.instructions() + then,
                &self.client,
                self.client.instructions() + then,
            )
        };
        let mut next_message = first_message_item;
        kept.shapes
            .iter()
            .zip(kept.paired.iter())
            .all(|pair| match pair {
                (Shape::Message, &then) => {
                    next_message += 1;
                    pairing.message_item(next_message - 1) == then && then.is_none_or(known)
                }
                (Shape::Call(..), &then) => then.is_some_and(known),
                (Shape::Unpaired, then) => then.is_none(),
            })
    }

    /// The previous bytes of a message of the last pass (`kept`, its record; the same
    /// message, checked by the caller), when each of its items now pairs with a client item
    /// of the same bytes as the one it paired with then (`layout` is this pass's client
    /// body).
    fn reusable(
        &self,
        kept: &Kept,
        paired: &[Option<usize>],
        layout: &ResponsesLayout,
    ) -> Option<(&ChunkedBody, Range<usize>)> {
        for (now, then) in paired.iter().zip(&kept.paired) {
            let same = match (now, then) {
                (Some(now), Some(then)) => layout.same_item(
                    layout.instructions() + now,
                    &self.client,
                    self.client.instructions() + then,
                ),
                (now, then) => now.is_none() && then.is_none(),
            };
            if !same {
                return None;
            }
        }
        self.kept_bytes(kept)
    }

    /// Where `kept`'s bytes lie in the body.
    fn kept_bytes(&self, kept: &Kept) -> Option<(&ChunkedBody, Range<usize>)> {
        (kept.range.end <= self.body.len()).then(|| (&self.body, kept.range.clone()))
    }
}

impl Kept {
    /// Its items' shapes, when it holds `message` itself.
    fn same_as(&self, message: &Arc<Message>) -> Option<&Arc<[Shape]>> {
        Arc::ptr_eq(&self.message, message).then_some(&self.shapes)
    }
}

impl mc_core::HeldBytes for EncodedResponses {
    /// The body, the client body's item places (the body itself is the remembered
    /// request's) and what each message's slot holds (the messages belong to the engine's
    /// rendered tail).
    fn held_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.body.len()
            + self.client.located_bytes()
            + self
                .kept
                .iter()
                .map(|kept| {
                    std::mem::size_of::<Kept>()
                        + kept.shapes.len() * std::mem::size_of::<Shape>()
                        + kept.paired.capacity() * std::mem::size_of::<Option<usize>>()
                })
                .sum::<usize>()
    }
}

#[cfg(test)]
#[path = "encoded_responses_tests.rs"]
mod tests;
