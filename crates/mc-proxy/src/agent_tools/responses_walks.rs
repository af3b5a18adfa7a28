//! Preparing a follow-up Responses request by its new items only, as
//! [`super::chat_walks`] does for Chat.
//!
//! A stateless Responses client (OpenCode, Pi, Codex with `store: false`) resends every item
//! on every call. Made ready whole, each request was decoded, walked run by run with a
//! store lookup per answer, converted and hashed again, and encoded again for the pass. The
//! walk's state after each message of the neutral model (a run of model items, or one other
//! item) is remembered with the body ([`ResponsesWalk`]): a follow-up with the same bytes
//! outside its item list and the same instructions resumes after the last message wholly
//! among the items the two bodies share that no new item can extend (a run of model items
//! is closed only by a shared item after it), and decodes, converts, looks up and encodes
//! only the items after it. The prepared body is assembled from the kept encodings around
//! the prepared head's bytes, byte for byte what the whole preparation
//! (`super::responses::splice_whole`) encodes, and the pass decodes it as it decodes any
//! follow-up ([`crate::responses_incremental`]).
//!
//! As on the other wires, an exchange put back is read again on every follow-up and must
//! still be stored unchanged, and an exchange stored later at an anchor a walk looked up in
//! vain forgets that walk ([`ResponsesWalks::forget_anchor`]).

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use mc_core::{Message, ProjectId};
use mc_store::{ReadTx, StoreError};
use mc_wire::responses::{self, Input, Item, ResponsesRequest};

use super::responses_exchange::{
    ResponsesSplice, WIRE, add_responses_tools, by_model, first_run_len, guidance_item,
    is_client_answer, pass,
};
use super::walk_steps::{
    FoundSplices, Progress, Remembered, StepMark, WalkQueue, assemble, encode, resume,
};
use crate::client_request::ClientRequest;
use crate::incremental::{Split, decode_alone};
use crate::render_responses::is_instruction;
use mc_agent_tools::splice::{Point, Used, stored};

/// The walk's state after one message of the conversation (after the instructions).
#[derive(Debug, Clone)]
struct Step {
    /// The client items after the instructions the walk had passed.
    end: usize,
    /// Whether the message was the model's run of items, which a following model item
    /// would have extended.
    by_model: bool,
    point: Point,
    progress: Progress,
}

impl Step {
    /// Whether a follow-up sharing the first `shared` client items after the instructions
    /// keeps this message as it is.
    fn closed_within(&self, shared: usize) -> bool {
        self.end < shared || (!self.by_model && self.end <= shared)
    }
}

impl StepMark for Step {
    fn progress(&self) -> Progress {
        self.progress
    }
}

/// A client's request outside its conversation, made ready once for every request that
/// repeats its bytes outside the item list and its instructions.
#[derive(Debug)]
pub struct ResponsesHead {
    /// The client's request with its instructions as its only items: what the project is
    /// resolved from and what says whether the client gets our tools.
    pub client: ClientRequest,
    instructions: usize,
    /// The prepared request (our tools after the client's), its item list empty.
    pub prepared: Arc<ResponsesRequest>,
    before: Bytes,
    after: Bytes,
    /// The instructions, then the guidance, encoded: the list's leading items.
    leading: Vec<Bytes>,
}

impl ResponsesHead {
    /// The head of a client request: `request` with its input taken out as `items` (read
    /// for the instructions only); `None` for a request whose history is at the provider
    /// (`previous_response_id`, `conversation`), which the whole preparation refuses.
    fn new(mut request: ResponsesRequest, items: &[Item]) -> Option<Self> {
        if request.stateful_reason().is_some() {
            return None;
        }
        let instructions = items.iter().take_while(|item| is_instruction(item)).count();
        let mut client = request.clone();
        let instruction_items = items.get(..instructions)?.to_vec();
        client.input = Some(Input::Items(instruction_items));
        add_responses_tools(&mut request);
        request.input = Some(Input::Items(Vec::new()));
        let (before, after) = request.encode_around_input();
        let leading = items[..instructions]
            .iter()
            .chain(std::iter::once(&guidance_item()))
            .map(encode)
            .collect::<Option<Vec<_>>>()?;
        Some(Self {
            client: ClientRequest::Responses(client),
            instructions,
            prepared: Arc::new(request),
            before: Bytes::from(before),
            after: Bytes::from(after),
            leading,
        })
    }

    fn instructions(&self) -> usize {
        self.instructions
    }
}

/// A client body's walk: where its items lie, and the state after each message.
#[derive(Debug)]
struct ResponsesWalk {
    body: Bytes,
    split: Split,
    head: Arc<ResponsesHead>,
    project: Option<ProjectId>,
    /// The client's first message after its instructions, in the neutral model.
    first: Option<Arc<Message>>,
    /// The spliced conversation as it goes upstream, encoded item by item.
    out: Vec<Bytes>,
    steps: Vec<Step>,
    found: FoundSplices<ResponsesSplice>,
}

impl Remembered for ResponsesWalk {
    fn body_and_ranges(&self) -> (&[u8], &[Range<usize>]) {
        (&self.body, &self.split.ranges)
    }

    fn held_bytes(&self) -> usize {
        self.body.len()
            + self.out.iter().map(Bytes::len).sum::<usize>()
            + self.out.capacity() * std::mem::size_of::<Bytes>()
            + self.steps.capacity() * std::mem::size_of::<Step>()
            + self.found.held_bytes()
            + self.split.ranges.len() * std::mem::size_of::<Range<usize>>()
    }

    fn looked_in_vain(&self, anchor: &str) -> bool {
        self.found.looked_in_vain(anchor)
    }
}

impl ResponsesWalk {
    /// Moves the walk past one message's `run` of client items, as the whole preparation
    /// does; `None` when an item does not encode (the whole preparation then decides).
    fn pass_run(
        &mut self,
        tx: &ReadTx<'_>,
        point: &mut Point,
        run: &[Item],
        used: &mut Used,
    ) -> Result<Option<()>, StoreError> {
        if !run.first().is_some_and(by_model) {
            return Ok(self.push(point, run));
        }
        let anchor = point.anchor();
        let found = stored::<ResponsesSplice>(tx, &anchor)?
            .filter(|found| is_client_answer(&found.splice, run));
        let Some(found) = found else {
            self.found.missed(anchor);
            return Ok(self.push(point, run));
        };
        used.note(&found);
        self.found.put_back(anchor, found.splice.clone());
        let splice = found.splice;
        let answer = splice.full_answer.as_deref().unwrap_or(run);
        for items in [&splice.before[..], answer, &splice.results] {
            if self.push(point, items).is_none() {
                return Ok(None);
            }
        }
        Ok(Some(()))
    }

    /// Appends `items` and moves the point past them.
    fn push(&mut self, point: &mut Point, items: &[Item]) -> Option<()> {
        pass(point, items);
        for item in items {
            self.out.push(encode(item)?);
        }
        Some(())
    }
}

/// A client body located against the remembered walks.
pub struct ResponsesLocated {
    split: Split,
    head: Arc<ResponsesHead>,
    walk: Option<ResponsesWalk>,
    /// Leading items `body` shares with `walk`'s body.
    shared: usize,
    /// The body's items when it was decoded whole (no walk to extend).
    items: Option<Vec<Item>>,
    generation: u64,
}

impl ResponsesLocated {
    /// The client's request outside its conversation.
    pub fn head(&self) -> &ResponsesHead {
        &self.head
    }

    /// The client's first message after its instructions, in the neutral model: remembered
    /// when the body repeats it, decoded otherwise.
    pub fn first_message(&self, body: &[u8]) -> Option<Arc<Message>> {
        let at = self.head.instructions();
        let walk_first = self.walk.as_ref().and_then(|walk| walk.first.clone());
        let first_closed = self.walk.as_ref().and_then(|walk| walk.steps.first());
        if let (Some(first), Some(step)) = (walk_first, first_closed)
            && step.closed_within(self.shared.saturating_sub(at))
        {
            return Some(first);
        }
        let decoded;
        let items = match &self.items {
            Some(items) => items.get(at..)?,
            None => {
                decoded = first_run(body, self.split.ranges.get(at..)?)?;
                &decoded
            }
        };
        responses::to_conversation(&items[..first_run_len(items)])
            .into_iter()
            .next()
            .map(Arc::new)
    }
}

/// The first message's items among `ranges` of `body`: one item, or the run of model items
/// it opens.
fn first_run(body: &[u8], ranges: &[Range<usize>]) -> Option<Vec<Item>> {
    let mut run = Vec::new();
    for range in ranges {
        let item = decode_alone(body.get(range.clone())?, Item::decode)?;
        let by_model = by_model(&item);
        if !run.is_empty() && !by_model {
            break;
        }
        run.push(item);
        if !by_model {
            break;
        }
    }
    Some(run)
}

/// What a walk gives the request.
pub struct ResponsesWalked {
    pub body: Bytes,
    /// Where the item list lies in `body`.
    pub list: Range<usize>,
    pub head: Arc<ResponsesRequest>,
    pub point: Point,
    /// Client items walked for this request: those after the messages it shares with a
    /// remembered body.
    pub walked_items: usize,
}

/// Recent Responses walks, most recent last, within a byte budget.
#[derive(Debug)]
pub struct ResponsesWalks {
    queue: WalkQueue<ResponsesWalk>,
}

impl ResponsesWalks {
    /// Remembers walks holding at most `budget_bytes` in all.
    pub fn new(budget_bytes: usize) -> Self {
        Self {
            queue: WalkQueue::new(budget_bytes),
        }
    }

    /// Locates `body`'s items and head against the remembered walks, or decodes it whole;
    /// `None` for a body the whole preparation must judge (a bare string input among them).
    pub fn locate(&self, body: &Bytes) -> Option<ResponsesLocated> {
        let generation = self.queue.generation();
        if let Some((walk, equal)) = self.queue.take_longest_prefix(body)
            && let Some((split, shared)) =
                Split::extend(&walk.split.ranges, walk.split.open, body, equal)
            && shared > walk.head.instructions()
            && split.same_outside(body, &walk.split, &walk.body)
        {
            return Some(ResponsesLocated {
                split,
                head: Arc::clone(&walk.head),
                walk: Some(walk),
                shared,
                items: None,
                generation,
            });
        }
        let split = Split::scan_input(body)?;
        let mut request = ResponsesRequest::decode(body, usize::MAX).ok()?;
        let Some(Input::Items(items)) = request.input.take() else {
            return None;
        };
        if split.ranges.len() != items.len() {
            return None;
        }
        let head = Arc::new(ResponsesHead::new(request, &items)?);
        Some(ResponsesLocated {
            split,
            head,
            walk: None,
            shared: 0,
            items: Some(items),
            generation,
        })
    }

    /// Walks `located` (the client `body`, whose anchors hash `project` and whose first
    /// message after the instructions is `first`) from where its remembered walk may
    /// resume, and remembers the result; `Ok(None)` when an item does not decode or encode
    /// alone, or refers to an item stored at the provider.
    pub fn walk(
        &self,
        tx: &ReadTx<'_>,
        body: &Bytes,
        located: ResponsesLocated,
        project: Option<ProjectId>,
        first: Arc<Message>,
        used: &mut Used,
    ) -> Result<Option<ResponsesWalked>, StoreError> {
        let ResponsesLocated {
            split,
            head,
            walk,
            shared,
            items,
            generation,
        } = located;
        let instructions = head.instructions();
        let mut walk = walk.filter(|walk| walk.project == project);
        let resumable = match &mut walk {
            Some(walk) => {
                let shared = shared - instructions;
                let kept = walk
                    .steps
                    .iter()
                    .take_while(|step| step.closed_within(shared))
                    .count();
                resume(
                    tx,
                    kept,
                    &mut walk.steps,
                    &mut walk.out,
                    &mut walk.found,
                    used,
                )?
            }
            None => false,
        };
        let mut walk = match walk {
            Some(walk) if resumable => walk,
            _ => ResponsesWalk {
                body: Bytes::new(),
                split: split.clone(),
                head: Arc::clone(&head),
                project: project.clone(),
                first: None,
                out: Vec::new(),
                steps: Vec::new(),
                found: FoundSplices::default(),
            },
        };
        let (mut point, walked) = match walk.steps.last() {
            Some(step) => (step.point.clone(), step.end),
            None => (Point::start(WIRE, project), 0),
        };
        let start = instructions + walked;
        let new_items = match items {
            Some(mut items) => items.split_off(start.min(items.len())),
            None => {
                let ranges = split.ranges.get(start..).unwrap_or_default();
                let decoded = ranges
                    .iter()
                    .map(|range| decode_alone(body.get(range.clone())?, Item::decode));
                match decoded.collect::<Option<Vec<_>>>() {
                    Some(items) => items,
                    None => return Ok(None),
                }
            }
        };
        if new_items
            .iter()
            .any(|item| item.type_name() == "item_reference")
        {
            return Ok(None);
        }
        let mut rest = new_items.as_slice();
        let mut end = walked;
        while !rest.is_empty() {
            let (run, after) = rest.split_at(first_run_len(rest));
            if walk.pass_run(tx, &mut point, run, used)?.is_none() {
                return Ok(None);
            }
            end += run.len();
            walk.steps.push(Step {
                end,
                by_model: by_model(&run[0]),
                point: point.clone(),
                progress: Progress::of(&walk.out, &walk.found),
            });
            rest = after;
        }
        let leading = head.leading.iter().chain(&walk.out);
        let (body_out, list) = assemble(&head.before, leading, &head.after);
        let walked = ResponsesWalked {
            body: body_out,
            list,
            head: Arc::clone(&head.prepared),
            point,
            walked_items: new_items.len(),
        };
        walk.body = body.clone();
        walk.split = split;
        walk.first = Some(first);
        self.queue.remember(walk, generation);
        Ok(Some(walked))
    }

    /// Forgets every walk that looked `anchor` up and put nothing back there.
    pub fn forget_anchor(&self, anchor: &str) {
        self.queue.forget_anchor(anchor);
    }
}

#[cfg(test)]
#[path = "responses_walks_tests.rs"]
mod tests;
