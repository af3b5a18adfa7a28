//! Preparing a follow-up Anthropic request by its new messages only.
//!
//! Putting the hidden exchanges back walks the conversation from its start: each message's
//! content hash moves the anchor on, and each assistant message looks its anchor up in the
//! store. Done afresh on every call, with a decode of the whole body before it and an
//! encode after, that walk cost what the whole conversation costs, on every call. A client
//! resends its previous body's bytes up to its first new or changed message, so the walk's
//! state after each message is remembered with the body ([`Walk`]): a follow-up locates its
//! messages against the remembered body as the pass's decoder does
//! ([`mc_wire::anthropic_incremental`]), resumes the walk after the last message the two share, and
//! decodes, hashes, looks up and encodes only the messages after it. The spliced messages
//! already produced are kept encoded and shared, and the prepared body is assembled from
//! them around the encoded head, so it is byte for byte what a fresh walk encodes (the
//! cached prefix upstream depends on it).
//!
//! A remembered walk is only as good as the store it read. An exchange put back is read
//! again on every follow-up and must still be there, unchanged (one deleted for its age, or
//! replaced, sends the request through a fresh walk); an exchange stored later at an anchor
//! the walk looked up and found nothing usable at forgets the walks that passed it
//! ([`RecentWalks::forget_anchor`]).

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use mc_core::{Message, ProjectId};
use mc_engine::tools::Offer;
use mc_store::{ReadTx, StoreError};
use mc_wire::anthropic::{self, BlockContent, MessageRole, MessagesRequest};
use mc_wire::anthropic_incremental::{Head, Layout};
use mc_wire::chunked_body::ChunkedBody;
use mc_wire::list_split::{Split, decode_alone};
use mc_wire::recent_bodies::KnownStart;

use crate::answer_key::is_answer;
use crate::anthropic_exchange::add_tools;
use crate::splice::{Point, Splice, Used, message_hash, stored};
use crate::walk_steps::{
    FoundSplices, Progress, Remembered, StepMark, WalkQueue, assemble, encode, kept_start, resume,
};

/// Results of our calls that wait for the client's next message, encoded for the end of
/// the list when none follows.
#[derive(Debug, Clone)]
struct Pending {
    message: Arc<anthropic::Message>,
    json: Bytes,
}

/// The walk's state after one client message.
#[derive(Debug, Clone)]
struct Step {
    point: Point,
    progress: Progress,
    pending: Option<Pending>,
}

impl StepMark for Step {
    fn progress(&self) -> Progress {
        self.progress
    }
}

/// A client body's walk: where its messages lie, and the state after each.
#[derive(Debug)]
pub struct Walk {
    layout: Layout,
    project: Option<ProjectId>,
    /// The client's first message, which the project is resolved from.
    first: Arc<Message>,
    /// The head with our tools and guidance, encoded around its message list.
    prepared: Arc<PreparedHead>,
    /// The spliced messages as they go upstream, encoded.
    out: Vec<Bytes>,
    /// The body last assembled from `prepared` and `out` (empty once `prepared` changed).
    assembled: ChunkedBody,
    steps: Vec<Step>,
    found: FoundSplices<Splice>,
    /// The queue's generation when the walk was taken out.
    generation: u64,
}

/// A client head made ready: our tools after the client's, the guidance last in the
/// system prompt, encoded once for every request with the same head bytes.
#[derive(Debug)]
pub struct PreparedHead {
    client: Arc<Head>,
    /// The prepared request, its message list empty.
    pub request: Arc<MessagesRequest>,
    before: Bytes,
    after: Bytes,
}

impl PreparedHead {
    /// Prepares `client` with what `offer` adds.
    fn new(client: Arc<Head>, offer: Offer) -> Self {
        let mut request = MessagesRequest::clone(&client.request());
        add_tools(&mut request, offer);
        let (before, after) = request.encode_around_messages();
        Self {
            client,
            request: Arc::new(request),
            before: Bytes::from(before),
            after: Bytes::from(after),
        }
    }
}

/// What a walk gives the request: the prepared body, where its message list lies, the
/// prepared head, and where the conversation stands after its last message.
#[derive(Debug)]
pub struct Walked {
    /// The prepared body.
    pub body: ChunkedBody,
    /// Where its message list (`[` … `]`) lies.
    pub list: Range<usize>,
    /// The prepared head, its message list empty.
    pub head: Arc<MessagesRequest>,
    /// Where the conversation stands after its last message.
    pub point: Point,
    /// Client messages walked for this request: those after the ones it shares with a
    /// remembered body.
    pub walked_messages: usize,
    /// What `body` is known to share with the body the walk assembled last.
    pub known: Option<KnownStart>,
}

/// A client body located against the remembered ones: its messages, its head, and the walk
/// it shares most leading messages with.
pub struct Located {
    split: Split,
    head: Arc<Head>,
    walk: Option<Walk>,
    shared: usize,
    /// The queue's generation before the walk was taken out.
    generation: u64,
}

impl Located {
    /// The client's request, its message list empty.
    pub fn request(&self) -> Arc<MessagesRequest> {
        self.head.request()
    }

    /// The client's first message in the neutral model: remembered when the body repeats
    /// it, decoded otherwise.
    pub fn first_message(&self, body: &ChunkedBody) -> Option<Arc<Message>> {
        if self.shared > 0
            && let Some(walk) = &self.walk
        {
            return Some(Arc::clone(&walk.first));
        }
        let bytes = body.get(self.split.ranges.first()?.clone())?;
        let wire: anthropic::Message = decode_alone(&bytes, serde_json::from_slice)?;
        Some(Arc::new(anthropic::into_message(wire)))
    }
}

/// Recent walks, most recent last, within a byte budget.
#[derive(Debug)]
pub struct RecentWalks {
    queue: WalkQueue<Walk>,
}

impl RecentWalks {
    /// Remembers walks holding at most `budget_bytes` in all.
    pub fn new(budget_bytes: usize) -> Self {
        Self {
            queue: WalkQueue::new(budget_bytes),
        }
    }

    /// Locates `body`'s messages and head; `None` for a body the full decode must judge.
    pub fn locate(&self, body: &ChunkedBody) -> Option<Located> {
        let generation = self.queue.generation();
        let (walk, equal) = self.queue.take_longest_prefix(body).unzip();
        if let (Some(found), Some(equal)) = (&walk, equal)
            && let Some((split, shared)) = found.layout.extend_split(body, equal)
            && let Some(head) = found.layout.head_matching(body, &split)
        {
            return Some(Located {
                split,
                head,
                walk,
                shared,
                generation,
            });
        }
        let whole = body.get(0..body.len())?;
        let split = Split::scan(&whole)?;
        let shared = walk
            .as_ref()
            .map_or(0, |walk| walk.layout.shared_messages(body, &split.ranges));
        let head = match walk
            .as_ref()
            .and_then(|walk| walk.layout.head_matching(body, &split))
        {
            Some(head) => head,
            None => Arc::new(Head::decode(&whole, &split, usize::MAX)?),
        };
        Some(Located {
            split,
            head,
            walk,
            shared,
            generation,
        })
    }

    /// Walks `located` (the client `body`) from where its remembered walk may resume, and
    /// remembers the result. `Ok(None)` when a message does not decode alone: the caller
    /// then decodes the whole body.
    pub fn walk(
        &self,
        tx: &ReadTx<'_>,
        body: &ChunkedBody,
        mut located: Located,
        start: Start,
        used: &mut Used,
    ) -> Result<Option<Walked>, StoreError> {
        let project = start.project.clone();
        let head = Arc::clone(&located.head);
        let mut walk = resumed_or_new(tx, &mut located, head, start, used)?;
        let known = walk.kept_start();
        let resumed_out = walk.out.len();
        let resumed = walk.steps.len();
        let (mut point, mut pending) = match walk.steps.last() {
            Some(step) => (step.point.clone(), step.pending.clone()),
            None => (Point::start("anthropic", project), None),
        };
        for range in located.split.ranges.get(resumed..).unwrap_or_default() {
            let Some(message) = body
                .get(range.clone())
                .and_then(|bytes| decode_alone(&bytes, serde_json::from_slice))
            else {
                return Ok(None);
            };
            let Some(next) = walk.pass(tx, &mut point, pending.take(), message, used)? else {
                return Ok(None);
            };
            pending = next;
            walk.steps.push(Step {
                point: point.clone(),
                progress: Progress::of(&walk.out, &walk.found),
                pending: pending.clone(),
            });
        }
        // The client ended on the answer itself: our results still follow it.
        let tail = pending.map(|results| {
            point.pass(&message_hash(&results.message));
            results.json
        });
        let prepared = &walk.prepared;
        let messages = walk.out.iter().chain(tail.as_ref());
        let kept = known.as_ref().map(|known| (known, resumed_out));
        let (body_out, list) = assemble(&prepared.before, messages, &prepared.after, kept);
        walk.assembled = body_out.clone();
        let walked = Walked {
            body: body_out,
            list,
            head: Arc::clone(&walk.prepared.request),
            point,
            walked_messages: located.split.ranges.len().saturating_sub(resumed),
            known,
        };
        walk.layout = Layout::new(
            body.clone(),
            located.split.ranges,
            walk.prepared.client.clone(),
        );
        let generation = walk.generation;
        self.queue.remember(walk, generation);
        Ok(Some(walked))
    }

    /// Forgets every walk that looked `anchor` up and put nothing back there: an exchange
    /// was just stored under it, and a fresh walk would now find it.
    pub fn forget_anchor(&self, anchor: &str) {
        self.queue.forget_anchor(anchor);
    }
}

/// What a walk starts from besides the body: the project the anchors hash, the client's
/// first message, and the tools and guidance the head gets.
pub struct Start {
    /// The project our tools act in.
    pub project: Option<ProjectId>,
    /// The client's first message.
    pub first: Arc<Message>,
    /// What our tools and guidance offer.
    pub offer: Offer,
}

impl Walk {
    /// What a body assembled from the encodings kept now shares with the one assembled
    /// last: the prepared head's bytes and every kept message (all of them that body's
    /// first, in order: a walk is only cut back, never rewritten), up to the separator after
    /// the last. The results that ended the last body wait outside `out`, so they are not
    /// claimed.
    fn kept_start(&self) -> Option<KnownStart> {
        kept_start(&self.assembled, &self.prepared.before, self.out.iter())
    }

    /// Moves the walk past one client message, as [`crate::splice::splice_in`] does; returns
    /// the results that wait for the next message. `None` when a message does not encode.
    fn pass(
        &mut self,
        tx: &ReadTx<'_>,
        point: &mut Point,
        pending: Option<Pending>,
        mut message: anthropic::Message,
        used: &mut Used,
    ) -> Result<Option<Option<Pending>>, StoreError> {
        if let Some(results) = pending {
            if message.role == MessageRole::User {
                message = with_results_first(&results.message, message);
            } else {
                point.pass(&message_hash(&results.message));
                self.out.push(results.json);
            }
        }
        let mut waiting = None;
        if message.role == MessageRole::Assistant {
            let anchor = point.anchor();
            match stored::<Splice>(tx, &anchor)? {
                Some(found)
                    if is_answer(
                        &found.splice.client_answer,
                        &anthropic::to_message(&message),
                    ) =>
                {
                    used.note(&found);
                    self.found.put_back(anchor, found.splice.clone());
                    let splice = found.splice;
                    for hidden in &splice.before {
                        point.pass(&message_hash(hidden));
                        let Some(json) = encode(hidden) else {
                            return Ok(None);
                        };
                        self.out.push(json);
                    }
                    if let Some(full) = splice.full_answer {
                        message = full;
                    }
                    if let Some(results) = splice.results {
                        let Some(json) = encode(&results) else {
                            return Ok(None);
                        };
                        waiting = Some(Pending {
                            message: Arc::new(results),
                            json,
                        });
                    }
                }
                Some(_) | None => self.found.missed(anchor),
            }
        }
        point.pass(&message_hash(&message));
        let Some(json) = encode(&message) else {
            return Ok(None);
        };
        self.out.push(json);
        Ok(Some(waiting))
    }
}

impl Remembered for Walk {
    fn body_and_ranges(&self) -> (&ChunkedBody, &[Range<usize>]) {
        (self.layout.body(), self.layout.ranges())
    }

    /// The client body, the spliced encodings, and small per-message state (the head is
    /// shared and small beside them).
    fn held_bytes(&self) -> usize {
        self.layout.body().len()
            + self.assembled.len()
            + self.out.iter().map(Bytes::len).sum::<usize>()
            + self.steps.capacity() * std::mem::size_of::<Step>()
            + self.found.held_bytes()
            + self.layout.ranges().len() * 16
    }

    fn looked_in_vain(&self, anchor: &str) -> bool {
        self.found.looked_in_vain(anchor)
    }
}

/// The client's user turn with our results first (as [`crate::splice::splice_in`] puts
/// them): tool results lead a user turn, and ours answer calls that came before the
/// client's in the same answer.
fn with_results_first(
    results: &anthropic::Message,
    mut message: anthropic::Message,
) -> anthropic::Message {
    let BlockContent::Blocks(blocks) = &results.content else {
        return message;
    };
    let mut blocks = blocks.clone();
    match message.content {
        BlockContent::Blocks(theirs) => blocks.extend(theirs),
        BlockContent::Text(text) => blocks.push(anthropic::ContentBlock::text(text)),
    }
    message.content = BlockContent::Blocks(blocks);
    message
}

/// The walk `located` took out, resumed where the body still shares its messages (its
/// prepared head renewed for another client head), or a walk from the start.
fn resumed_or_new(
    tx: &ReadTx<'_>,
    located: &mut Located,
    head: Arc<Head>,
    start: Start,
    used: &mut Used,
) -> Result<Walk, StoreError> {
    let Start {
        project,
        first,
        offer,
    } = start;
    let generation = located.generation;
    let mut walk = located.walk.take().filter(|walk| walk.project == project);
    let resumable = match &mut walk {
        Some(walk) => resume(
            tx,
            located.shared,
            &mut walk.steps,
            &mut walk.out,
            &mut walk.found,
            used,
        )?,
        None => false,
    };
    let mut walk = match walk {
        Some(mut walk) if resumable => {
            if !Arc::ptr_eq(&walk.prepared.client, &head) {
                walk.prepared = Arc::new(PreparedHead::new(head, offer));
                walk.assembled = ChunkedBody::new();
            }
            walk.first = first;
            walk
        }
        _ => Walk {
            layout: Layout::default(),
            project,
            first,
            prepared: Arc::new(PreparedHead::new(head, offer)),
            out: Vec::new(),
            assembled: ChunkedBody::new(),
            steps: Vec::new(),
            found: FoundSplices::default(),
            generation,
        },
    };
    walk.generation = generation;
    Ok(walk)
}

#[cfg(test)]
mod tests;
