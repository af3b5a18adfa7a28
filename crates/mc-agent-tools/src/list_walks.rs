//! Preparing a follow-up request by its new entries only, on a wire whose requests carry
//! their conversation as one JSON list after leading instructions: Chat Completions'
//! messages ([`crate::chat_walks`]) and Responses' items ([`crate::responses_walks`]).
//!
//! A client resends its previous body's bytes up to its first new entry, so the walk's
//! state after each message is remembered with the body ([`ListWalk`]): a follow-up with the
//! same bytes outside its list and the same instructions resumes after the last message
//! both bodies keep as it is ([`ListWire::kept_steps`]), and decodes, converts, looks up and
//! encodes only the entries after it. The prepared body is assembled from the kept
//! encodings around the prepared head's bytes. What differs between the wires (how entries
//! make messages, how an exchange is put back) is the wire's [`ListWire`].

use std::fmt::Debug;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use mc_core::{Message, ProjectId};
use mc_store::{ReadTx, StoreError};
use serde::de::DeserializeOwned;

use crate::splice::{Point, Used};
use crate::walk_steps::{
    FoundSplices, Progress, Remembered, StepMark, WalkQueue, assemble, kept_start, resume,
};
use mc_engine::tools::Offer;
use mc_wire::chunked_body::ChunkedBody;
use mc_wire::list_split::Split;
use mc_wire::recent_bodies::KnownStart;

/// What the walk needs of its wire.
pub trait ListWire: Sized {
    /// The wire's name in exchange anchors.
    const WIRE: &'static str;
    /// The wire's request, its list taken out.
    type Request: Debug;
    /// One entry of the list.
    type Entry;
    /// An exchange stored for the wire.
    type Splice: PartialEq + DeserializeOwned + Debug;
    /// The walk's state after one message.
    type Step: StepMark + Debug;

    /// Where a whole body's list and its entries lie.
    fn scan(body: &[u8]) -> Option<Split>;
    /// A whole body's request and its list; `None` for one the whole preparation judges.
    fn decode(body: &[u8]) -> Option<(Self::Request, Vec<Self::Entry>)>;
    /// One entry alone.
    fn decode_entry(bytes: &[u8]) -> Option<Self::Entry>;
    /// The head of a request, its list taken out as `entries`, prepared with what `offer`
    /// adds.
    fn head(
        request: Self::Request,
        entries: &[Self::Entry],
        offer: Offer,
    ) -> Option<ListHead<Self::Request>>;
    /// How many of `steps` a follow-up sharing its first `shared` entries after the
    /// instructions keeps as they are.
    fn kept_steps(steps: &[Self::Step], shared: usize) -> usize;
    /// The entries after the instructions that `steps` walked.
    fn walked(steps: &[Self::Step]) -> usize;
    /// The point after a step.
    fn point(step: &Self::Step) -> &Point;
    /// Moves `walk` past `entries` (those after the first `walked`), a step per message;
    /// `Ok(None)` when one does not convert or encode (the whole preparation decides).
    fn walk_entries(
        walk: &mut ListWalk<Self>,
        tx: &ReadTx<'_>,
        point: &mut Point,
        entries: Vec<Self::Entry>,
        walked: usize,
        used: &mut Used,
    ) -> Result<Option<()>, StoreError>;
    /// The entries of the first message among those of `ranges` in `body`.
    fn first_entries(body: &[u8], ranges: &[Range<usize>]) -> Option<Vec<Self::Entry>>;
    /// The first message of `entries`, in the neutral model.
    fn first_message(entries: &[Self::Entry]) -> Option<Message>;
}

/// A client's request outside its conversation, made ready once for every request that
/// repeats its bytes outside the list and its instructions.
#[derive(Debug)]
pub struct ListHead<R> {
    /// The client's request with its instructions as its only entries: what the project is
    /// resolved from and what says whether the client gets our tools.
    pub client: R,
    instructions: usize,
    /// The prepared request (our tools after the client's), its list empty.
    pub prepared: Arc<R>,
    before: Bytes,
    after: Bytes,
    /// The instructions, then the guidance, encoded: the list's leading entries.
    leading: Vec<Bytes>,
}

impl<R> ListHead<R> {
    /// A head: the client's request, its leading `instructions`, the prepared request, the
    /// prepared bytes before and after the list, and the list's leading entries encoded.
    pub fn new(
        client: R,
        instructions: usize,
        prepared: R,
        (before, after): (Vec<u8>, Vec<u8>),
        leading: Vec<Bytes>,
    ) -> Self {
        Self {
            client,
            instructions,
            prepared: Arc::new(prepared),
            before: Bytes::from(before),
            after: Bytes::from(after),
            leading,
        }
    }
}

/// A client body's walk: where its entries lie, and the state after each message.
#[derive(Debug)]
pub struct ListWalk<W: ListWire> {
    body: ChunkedBody,
    split: Split,
    head: Arc<ListHead<W::Request>>,
    project: Option<ProjectId>,
    /// The client's first message after its instructions, in the neutral model.
    first: Option<Arc<Message>>,
    /// The spliced conversation as it goes upstream, encoded entry by entry.
    pub out: Vec<Bytes>,
    /// The body last assembled from `head` and `out`.
    prepared: ChunkedBody,
    /// The state after each client message walked.
    pub steps: Vec<W::Step>,
    /// The exchanges the walk put back, and the anchors it looked up in vain.
    pub found: FoundSplices<W::Splice>,
}

impl<W: ListWire> ListWalk<W> {
    /// Where the walk stands now, for the step it is about to push.
    pub fn progress(&self) -> Progress {
        Progress::of(&self.out, &self.found)
    }

    /// The walk cut back to its state after the messages a follow-up sharing its first
    /// `shared` entries after the instructions keeps ([`resume`]); `None` when it cannot
    /// resume there.
    fn resumed(
        mut self,
        tx: &ReadTx<'_>,
        shared: usize,
        used: &mut Used,
    ) -> Result<Option<Self>, StoreError> {
        let kept = W::kept_steps(&self.steps, shared);
        let resumable = resume(
            tx,
            kept,
            &mut self.steps,
            &mut self.out,
            &mut self.found,
            used,
        )?;
        Ok(resumable.then_some(self))
    }

    /// What a body assembled from the encodings kept now shares with the one assembled
    /// last: the head's bytes and every kept encoding (all of them that body's first, in
    /// order), up to the separator after the last.
    fn kept_start(&self) -> Option<KnownStart> {
        let kept = self.head.leading.iter().chain(&self.out);
        kept_start(&self.prepared, &self.head.before, kept)
    }
}

impl<W: ListWire> Remembered for ListWalk<W> {
    fn body_and_ranges(&self) -> (&ChunkedBody, &[Range<usize>]) {
        (&self.body, &self.split.ranges)
    }

    fn held_bytes(&self) -> usize {
        self.body.len()
            + self.prepared.len()
            + self.out.iter().map(Bytes::len).sum::<usize>()
            + self.out.capacity() * std::mem::size_of::<Bytes>()
            + self.steps.capacity() * std::mem::size_of::<W::Step>()
            + self.found.held_bytes()
            + self.split.ranges.len() * std::mem::size_of::<Range<usize>>()
    }

    fn looked_in_vain(&self, anchor: &str) -> bool {
        self.found.looked_in_vain(anchor)
    }
}

/// A client body located against the remembered walks.
pub struct ListLocated<W: ListWire> {
    split: Split,
    head: Arc<ListHead<W::Request>>,
    walk: Option<ListWalk<W>>,
    /// Leading entries `body` shares with `walk`'s body.
    shared: usize,
    /// The body's entries when it was decoded whole (no walk to extend).
    entries: Option<Vec<W::Entry>>,
    generation: u64,
}

impl<W: ListWire> ListLocated<W> {
    /// The client's request outside its conversation.
    pub fn head(&self) -> &ListHead<W::Request> {
        &self.head
    }

    /// The client's first message after its instructions, in the neutral model: remembered
    /// when the body keeps it as it was, decoded otherwise.
    pub fn first_message(&self, body: &ChunkedBody) -> Option<Arc<Message>> {
        let at = self.head.instructions;
        if let Some(walk) = &self.walk
            && let (Some(first), Some(step)) = (&walk.first, walk.steps.first())
            && W::kept_steps(std::slice::from_ref(step), self.shared.saturating_sub(at)) > 0
        {
            return Some(Arc::clone(first));
        }
        let decoded;
        let entries = match &self.entries {
            Some(entries) => entries.get(at..)?,
            None => {
                let whole = body.get(0..body.len())?;
                decoded = W::first_entries(&whole, self.split.ranges.get(at..)?)?;
                &decoded
            }
        };
        W::first_message(entries).map(Arc::new)
    }
}

/// What a walk gives the request.
pub struct ListWalked<R> {
    /// The prepared body: our tools, the guidance and the exchanges put back, encoded.
    pub body: ChunkedBody,
    /// Where the list lies in `body`.
    pub list: Range<usize>,
    /// The prepared request, its list empty.
    pub head: Arc<R>,
    /// Where the conversation stands after its last entry.
    pub point: Point,
    /// Client entries walked for this request: those after the messages it shares with a
    /// remembered body.
    pub walked_entries: usize,
    /// What `body` is known to share with the body the walk assembled last.
    pub known: Option<KnownStart>,
}

/// Recent walks of one wire, most recent last, within a byte budget.
#[derive(Debug)]
pub struct ListWalks<W: ListWire> {
    queue: WalkQueue<ListWalk<W>>,
}

impl<W: ListWire> ListWalks<W> {
    /// Remembers walks holding at most `budget_bytes` in all.
    pub fn new(budget_bytes: usize) -> Self {
        Self {
            queue: WalkQueue::new(budget_bytes),
        }
    }

    /// Locates `body`'s entries and head against the remembered walks, or decodes it whole
    /// and prepares its head with what `offer` adds; `None` for a body the whole
    /// preparation must judge.
    pub fn locate(&self, body: &ChunkedBody, offer: Offer) -> Option<ListLocated<W>> {
        let generation = self.queue.generation();
        if let Some((walk, equal)) = self.queue.take_longest_prefix(body)
            && let Some((split, shared)) =
                Split::extend(&walk.split.ranges, walk.split.open, body, equal)
            && shared > walk.head.instructions
            && split.same_outside(body, &walk.split, &walk.body)
        {
            return Some(ListLocated {
                split,
                head: Arc::clone(&walk.head),
                walk: Some(walk),
                shared,
                entries: None,
                generation,
            });
        }
        let whole = body.get(0..body.len())?;
        let split = W::scan(&whole)?;
        let (request, entries) = W::decode(&whole)?;
        if split.ranges.len() != entries.len() {
            return None;
        }
        let head = Arc::new(W::head(request, &entries, offer)?);
        Some(ListLocated {
            split,
            head,
            walk: None,
            shared: 0,
            entries: Some(entries),
            generation,
        })
    }

    /// Walks `located` (the client `body`, whose anchors hash `project` and whose first
    /// message after the instructions is `first`) from where its remembered walk may
    /// resume, and remembers the result; `Ok(None)` when an entry does not decode, convert
    /// or encode alone.
    pub fn walk(
        &self,
        tx: &ReadTx<'_>,
        body: &ChunkedBody,
        located: ListLocated<W>,
        project: Option<ProjectId>,
        first: Arc<Message>,
        used: &mut Used,
    ) -> Result<Option<ListWalked<W::Request>>, StoreError> {
        let ListLocated {
            split,
            head,
            walk,
            shared,
            entries,
            generation,
        } = located;
        let instructions = head.instructions;
        let resumed = walk.filter(|walk| walk.project == project);
        let mut walk = match resumed.map(|walk| walk.resumed(tx, shared - instructions, used)) {
            Some(Ok(Some(walk))) => walk,
            Some(Err(error)) => return Err(error),
            Some(Ok(None)) | None => ListWalk {
                body: ChunkedBody::new(),
                split: split.clone(),
                head: Arc::clone(&head),
                project: project.clone(),
                first: None,
                out: Vec::new(),
                prepared: ChunkedBody::new(),
                steps: Vec::new(),
                found: FoundSplices::default(),
            },
        };
        let known = walk.kept_start();
        let kept_encodings = head.leading.len() + walk.out.len();
        let (mut point, walked) = match walk.steps.last() {
            Some(step) => (W::point(step).clone(), W::walked(&walk.steps)),
            None => (Point::start(W::WIRE, project), 0),
        };
        let start = instructions + walked;
        let new_entries = match entries {
            Some(mut entries) => entries.split_off(start.min(entries.len())),
            None => {
                let ranges = split.ranges.get(start..).unwrap_or_default();
                let decoded = ranges
                    .iter()
                    .map(|range| W::decode_entry(&body.get(range.clone())?));
                match decoded.collect::<Option<Vec<_>>>() {
                    Some(entries) => entries,
                    None => return Ok(None),
                }
            }
        };
        let walked_entries = new_entries.len();
        if W::walk_entries(&mut walk, tx, &mut point, new_entries, walked, used)?.is_none() {
            return Ok(None);
        }
        let leading = head.leading.iter().chain(&walk.out);
        let kept = known.as_ref().map(|known| (known, kept_encodings));
        let (body_out, list) = assemble(&head.before, leading, &head.after, kept);
        walk.prepared = body_out.clone();
        let walked = ListWalked {
            body: body_out,
            list,
            head: Arc::clone(&head.prepared),
            point,
            walked_entries,
            known,
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
