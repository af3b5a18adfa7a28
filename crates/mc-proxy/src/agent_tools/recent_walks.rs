//! Preparing a follow-up Anthropic request by its new messages only.
//!
//! Putting the hidden exchanges back walks the conversation from its start: each message's
//! content hash moves the anchor on, and each assistant message looks its anchor up in the
//! store. Done afresh on every call, with a decode of the whole body before it and an
//! encode after, that walk cost what the whole conversation costs, on every call. A client
//! resends its previous body's bytes up to its first new or changed message, so the walk's
//! state after each message is remembered with the body ([`Walk`]): a follow-up locates its
//! messages against the remembered body as the pass's decoder does
//! ([`crate::incremental`]), resumes the walk after the last message the two share, and
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

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use mc_core::{Message, ProjectId};
use mc_store::{ReadTx, StoreError};
use mc_wire::anthropic::{self, BlockContent, MessageRole, MessagesRequest};

use crate::incremental::{Head, Layout, Split, common_prefix_len, nests_too_deep};
use mc_agent_tools::answer_key::is_answer;
use mc_agent_tools::splice::{Point, Splice, Used, message_hash, stored};

/// Walks remembered at most: a proxy serves a handful of live conversations at a time.
const REMEMBERED: usize = 16;

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
    /// Spliced messages produced so far.
    out_len: usize,
    pending: Option<Pending>,
    /// Exchanges put back and anchors looked up in vain so far.
    found_len: usize,
    missed_len: usize,
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
    steps: Vec<Step>,
    /// Exchanges put back, with their anchors, as read.
    found: Vec<(String, Splice)>,
    /// Anchors looked up where nothing was put back.
    missed: Vec<String>,
    /// [`RecentWalks::generation`] when the walk was taken out.
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
    /// Prepares `client` with `add_tools`.
    fn new(client: Arc<Head>, add_tools: fn(&mut MessagesRequest)) -> Self {
        let mut request = MessagesRequest::clone(&client.request());
        add_tools(&mut request);
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
    pub body: Bytes,
    pub list: std::ops::Range<usize>,
    pub head: Arc<MessagesRequest>,
    pub point: Point,
    /// Client messages walked for this request: those after the ones it shares with a
    /// remembered body.
    pub walked_messages: usize,
}

/// A client body located against the remembered ones: its messages, its head, and the walk
/// it shares most leading messages with.
pub struct Located {
    split: Split,
    head: Arc<Head>,
    walk: Option<Walk>,
    shared: usize,
    /// [`RecentWalks::generation`] before the walk was taken out.
    generation: u64,
}

impl Located {
    /// The client's request, its message list empty.
    pub fn request(&self) -> Arc<MessagesRequest> {
        self.head.request()
    }

    /// The client's first message in the neutral model: remembered when the body repeats
    /// it, decoded otherwise.
    pub fn first_message(&self, body: &[u8]) -> Option<Arc<Message>> {
        if self.shared > 0
            && let Some(walk) = &self.walk
        {
            return Some(Arc::clone(&walk.first));
        }
        let bytes = body.get(self.split.ranges.first()?.clone())?;
        let wire: anthropic::Message = decode_message(bytes)?;
        Some(Arc::new(anthropic::into_message(wire)))
    }
}

/// Recent walks, most recent last, within a byte budget.
#[derive(Debug)]
pub struct RecentWalks {
    recent: Mutex<VecDeque<(Walk, usize)>>,
    budget_bytes: usize,
    /// Bumped whenever an exchange is stored: a walk taken out before may have missed it.
    generation: AtomicU64,
}

impl RecentWalks {
    /// Remembers walks holding at most `budget_bytes` in all.
    pub fn new(budget_bytes: usize) -> Self {
        Self {
            recent: Mutex::new(VecDeque::new()),
            budget_bytes,
            generation: AtomicU64::new(0),
        }
    }

    /// Locates `body`'s messages and head; `None` for a body the full decode must judge.
    pub fn locate(&self, body: &Bytes) -> Option<Located> {
        let generation = self.generation.load(Ordering::Acquire);
        let walk = self.take_longest_prefix(body);
        if let Some(found) = &walk
            && let Some((split, shared)) = found.layout.extend_split(body)
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
        let split = Split::scan(body)?;
        let shared = walk
            .as_ref()
            .map_or(0, |walk| walk.layout.shared_messages(body, &split.ranges));
        let head = match walk
            .as_ref()
            .and_then(|walk| walk.layout.head_matching(body, &split))
        {
            Some(head) => head,
            None => Arc::new(Head::decode(body, &split, usize::MAX)?),
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
        body: &Bytes,
        mut located: Located,
        start: Start,
        used: &mut Used,
    ) -> Result<Option<Walked>, StoreError> {
        let project = start.project.clone();
        let head = Arc::clone(&located.head);
        let mut walk = resumed_or_new(tx, &mut located, head, start, used)?;
        let resumed = walk.steps.len();
        let (mut point, mut pending) = match walk.steps.last() {
            Some(step) => (step.point.clone(), step.pending.clone()),
            None => (Point::start("anthropic", project), None),
        };
        for range in located.split.ranges.get(resumed..).unwrap_or_default() {
            let Some(message) = body.get(range.clone()).and_then(decode_message) else {
                return Ok(None);
            };
            let Some(next) = walk.pass(tx, &mut point, pending.take(), message, used)? else {
                return Ok(None);
            };
            pending = next;
            walk.steps.push(Step {
                point: point.clone(),
                out_len: walk.out.len(),
                pending: pending.clone(),
                found_len: walk.found.len(),
                missed_len: walk.missed.len(),
            });
        }
        // The client ended on the answer itself: our results still follow it.
        let tail = pending.map(|results| {
            point.pass(&message_hash(&results.message));
            results.json
        });
        let (body_out, list) = assemble(&walk.prepared, &walk.out, tail.as_ref());
        let walked = Walked {
            body: body_out,
            list,
            head: Arc::clone(&walk.prepared.request),
            point,
            walked_messages: located.split.ranges.len().saturating_sub(resumed),
        };
        walk.layout = Layout::new(
            body.clone(),
            located.split.ranges,
            walk.prepared.client.clone(),
        );
        self.remember(walk);
        Ok(Some(walked))
    }

    /// Forgets every walk that looked `anchor` up and put nothing back there: an exchange
    /// was just stored under it, and a fresh walk would now find it.
    pub fn forget_anchor(&self, anchor: &str) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        recent.retain(|(walk, _)| !walk.missed.iter().any(|missed| missed == anchor));
    }

    fn remember(&self, walk: Walk) {
        if walk.generation != self.generation.load(Ordering::Acquire) {
            return;
        }
        let held_bytes = walk.held_bytes();
        if held_bytes > self.budget_bytes {
            return;
        }
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        recent.push_back((walk, held_bytes));
        let mut bytes: usize = recent.iter().map(|(_, held)| held).sum();
        while recent.len() > REMEMBERED || bytes > self.budget_bytes {
            match recent.pop_front() {
                Some((_, held)) => bytes -= held,
                None => break,
            }
        }
    }

    /// Takes out the walk whose body `body` repeats through the most whole messages (at
    /// least one), the latest on a tie.
    fn take_longest_prefix(&self, body: &[u8]) -> Option<Walk> {
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        let best = recent
            .iter()
            .enumerate()
            .map(|(position, (walk, _))| {
                let equal = common_prefix_len(walk.layout.body(), body);
                (walk.layout.whole_messages_within(equal), position)
            })
            .filter(|&(whole, _)| whole > 0)
            .max()?;
        recent.remove(best.1).map(|(walk, _)| walk)
    }
}

/// What a walk starts from besides the body: the project the anchors hash, the client's
/// first message, and how the head gets our tools.
pub struct Start {
    pub project: Option<ProjectId>,
    pub first: Arc<Message>,
    pub add_tools: fn(&mut MessagesRequest),
}

/// Cuts `walk` back to its state after its first `shared` messages, after checking that the
/// exchanges it put back there are still stored as read (noting their use, as a fresh walk
/// would); `false` when one is not, and the walk must start afresh.
fn resume(
    tx: &ReadTx<'_>,
    walk: &mut Walk,
    shared: usize,
    used: &mut Used,
) -> Result<bool, StoreError> {
    let Some(step) = shared
        .checked_sub(1)
        .and_then(|at| walk.steps.get(at))
        .cloned()
    else {
        return Ok(false);
    };
    for (anchor, splice) in walk.found.get(..step.found_len).unwrap_or_default() {
        match stored::<Splice>(tx, anchor)? {
            Some(found) if &found.splice == splice => used.note(&found),
            Some(_) | None => return Ok(false),
        }
    }
    walk.steps.truncate(shared);
    walk.out.truncate(step.out_len);
    walk.found.truncate(step.found_len);
    walk.missed.truncate(step.missed_len);
    Ok(true)
}

impl Walk {
    /// Moves the walk past one client message, as [`super::splice::splice_in`] does; returns
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
                    self.found.push((anchor, found.splice.clone()));
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
                Some(_) | None => self.missed.push(anchor),
            }
        }
        point.pass(&message_hash(&message));
        let Some(json) = encode(&message) else {
            return Ok(None);
        };
        self.out.push(json);
        Ok(Some(waiting))
    }

    /// What the walk holds: the client body, the spliced encodings, and small per-message
    /// state (the head is shared and small beside them).
    fn held_bytes(&self) -> usize {
        self.layout.body().len()
            + self.out.iter().map(Bytes::len).sum::<usize>()
            + self.steps.capacity() * std::mem::size_of::<Step>()
            + self
                .missed
                .iter()
                .map(|anchor| anchor.len() + 24)
                .sum::<usize>()
            + self.layout.ranges_len() * 16
    }
}

/// The prepared body: the head's bytes around the list of `out` (and `tail`), the list's
/// range in it.
fn assemble(
    head: &PreparedHead,
    out: &[Bytes],
    tail: Option<&Bytes>,
) -> (Bytes, std::ops::Range<usize>) {
    let messages = out.iter().chain(tail);
    let list_bytes: usize = messages.clone().map(|json| json.len() + 1).sum::<usize>() + 1;
    let mut body = Vec::with_capacity(head.before.len() + list_bytes + head.after.len());
    body.extend_from_slice(&head.before);
    let start = body.len();
    body.push(b'[');
    for (index, json) in messages.enumerate() {
        if index > 0 {
            body.push(b',');
        }
        body.extend_from_slice(json);
    }
    body.push(b']');
    let list = start..body.len();
    body.extend_from_slice(&head.after);
    (Bytes::from(body), list)
}

/// One message's bytes decoded alone, as the whole body's decode reads them; `None` for
/// one nested past what the whole decode accepts, or invalid.
fn decode_message(bytes: &[u8]) -> Option<anthropic::Message> {
    if nests_too_deep(bytes) {
        return None;
    }
    serde_json::from_slice(bytes).ok()
}

/// A message as the request's encoding writes it.
fn encode(message: &anthropic::Message) -> Option<Bytes> {
    serde_json::to_vec(message).ok().map(Bytes::from)
}

/// The client's user turn with our results first (as [`super::splice::splice_in`] puts
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
        add_tools,
    } = start;
    let generation = located.generation;
    let mut walk = located.walk.take().filter(|walk| walk.project == project);
    let resumable = match &mut walk {
        Some(walk) => resume(tx, walk, located.shared, used)?,
        None => false,
    };
    let mut walk = match walk {
        Some(mut walk) if resumable => {
            if !Arc::ptr_eq(&walk.prepared.client, &head) {
                walk.prepared = Arc::new(PreparedHead::new(head, add_tools));
            }
            walk.first = first;
            walk
        }
        _ => Walk {
            layout: Layout::default(),
            project,
            first,
            prepared: Arc::new(PreparedHead::new(head, add_tools)),
            out: Vec::new(),
            steps: Vec::new(),
            found: Vec::new(),
            missed: Vec::new(),
            generation,
        },
    };
    walk.generation = generation;
    Ok(walk)
}

#[cfg(test)]
mod tests;
