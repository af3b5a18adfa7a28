//! Preparing a follow-up Chat Completions request by its new messages only, as
//! [`super::recent_walks`] does for Anthropic.
//!
//! Made ready whole, a Chat request cost what its conversation costs on every call: decoded,
//! copied to be remembered, walked message by message with a store lookup per answer,
//! converted and hashed again, copied for the pass, and the result encoded again for it. A
//! client resends its previous body's bytes up to its first new message, so the walk's state
//! after each message is remembered with the body ([`ChatWalk`]): a follow-up with the same
//! bytes outside its message list and the same instructions resumes after the last message
//! the two bodies share, and decodes, converts, looks up and encodes only the messages after
//! it. The prepared body is assembled from the kept encodings around the prepared head's
//! bytes, byte for byte what the whole preparation (`super::chat::splice_whole`) encodes,
//! and the pass decodes it as it decodes any follow-up ([`crate::chat_incremental`]).
//!
//! As on Anthropic, an exchange put back is read again on every follow-up and must still be
//! stored unchanged, and an exchange stored later at an anchor a walk looked up in vain
//! forgets that walk ([`ChatWalks::forget_anchor`]).

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use mc_core::{Message, ProjectId};
use mc_store::{ReadTx, StoreError};
use mc_wire::openai::{self, ChatMessage, ChatRequest, ChatRole};

use super::chat_exchange::{ChatSplice, WIRE, add_chat_tools, guidance_message};
use super::walk_steps::{
    FoundSplices, Progress, Remembered, StepMark, WalkQueue, assemble, encode, resume,
};
use crate::client_request::ClientRequest;
use crate::incremental::{Split, decode_alone};
use crate::render_openai::is_instruction;
use mc_agent_tools::answer_key::is_answer;
use mc_agent_tools::splice::{Point, Used, stored};

/// The walk's state after one client message of the conversation (after the instructions).
#[derive(Debug, Clone)]
struct Step {
    point: Point,
    progress: Progress,
}

impl StepMark for Step {
    fn progress(&self) -> Progress {
        self.progress
    }
}

/// A client's request outside its conversation, made ready once for every request that
/// repeats its bytes outside the message list and its instructions.
#[derive(Debug)]
pub struct ChatHead {
    /// The client's request with its instructions as its only messages: what the project is
    /// resolved from and what says whether the client gets our tools.
    pub client: ClientRequest,
    instructions: usize,
    /// The prepared request (our tools after the client's), its message list empty.
    pub prepared: Arc<ChatRequest>,
    before: Bytes,
    after: Bytes,
    /// The instructions, then the guidance, encoded: the list's leading messages.
    leading: Vec<Bytes>,
}

impl ChatHead {
    /// The head of a client request: `request` with its message list taken out as
    /// `messages` (read for the instructions only).
    fn new(mut request: ChatRequest, messages: &[ChatMessage]) -> Option<Self> {
        let instructions = messages.iter().take_while(|m| is_instruction(m)).count();
        let mut client = request.clone();
        client.messages = messages.get(..instructions)?.to_vec();
        add_chat_tools(&mut request);
        let (before, after) = request.encode_around_messages();
        let leading = client
            .messages
            .iter()
            .chain(std::iter::once(&guidance_message()))
            .map(encode)
            .collect::<Option<Vec<_>>>()?;
        Some(Self {
            client: ClientRequest::OpenAi(client),
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

/// A client body's walk: where its messages lie, and the state after each.
#[derive(Debug)]
struct ChatWalk {
    body: Bytes,
    split: Split,
    head: Arc<ChatHead>,
    project: Option<ProjectId>,
    /// The client's first message after its instructions, in the neutral model.
    first: Option<Arc<Message>>,
    /// The spliced conversation as it goes upstream, encoded.
    out: Vec<Bytes>,
    steps: Vec<Step>,
    found: FoundSplices<ChatSplice>,
}

impl Remembered for ChatWalk {
    fn body_and_ranges(&self) -> (&[u8], &[Range<usize>]) {
        (&self.body, &self.split.ranges)
    }

    fn held_bytes(&self) -> usize {
        self.body.len()
            + self.out.iter().map(Bytes::len).sum::<usize>()
            + self.steps.capacity() * std::mem::size_of::<Step>()
            + self.found.held_bytes()
            + self.split.ranges.len() * std::mem::size_of::<Range<usize>>()
    }

    fn looked_in_vain(&self, anchor: &str) -> bool {
        self.found.looked_in_vain(anchor)
    }
}

impl ChatWalk {
    /// Moves the walk past one client message, as the whole preparation does;
    /// `None` when a message does not convert or encode (the whole preparation then
    /// decides).
    fn pass(
        &mut self,
        tx: &ReadTx<'_>,
        point: &mut Point,
        mut message: ChatMessage,
        used: &mut Used,
    ) -> Result<Option<()>, StoreError> {
        let Ok(mut converted) = openai::to_message(&message) else {
            return Ok(None);
        };
        let mut after = Vec::new();
        if message.role == ChatRole::Assistant {
            let anchor = point.anchor();
            match stored::<ChatSplice>(tx, &anchor)? {
                Some(found) if is_answer(&found.splice.client_answer, &converted) => {
                    used.note(&found);
                    self.found.put_back(anchor, found.splice.clone());
                    let splice = found.splice;
                    for hidden in &splice.before {
                        if self.push(point, hidden, None).is_none() {
                            return Ok(None);
                        }
                    }
                    if let Some(full) = splice.full_answer {
                        let Ok(full_converted) = openai::to_message(&full) else {
                            return Ok(None);
                        };
                        (message, converted) = (full, full_converted);
                    }
                    after = splice.results;
                }
                Some(_) | None => self.found.missed(anchor),
            }
        }
        if self.push(point, &message, Some(converted)).is_none() {
            return Ok(None);
        }
        for result in &after {
            if self.push(point, result, None).is_none() {
                return Ok(None);
            }
        }
        Ok(Some(()))
    }

    /// Appends `message` (`converted`, its neutral form, when known) and moves the point
    /// past it.
    fn push(
        &mut self,
        point: &mut Point,
        message: &ChatMessage,
        converted: Option<Message>,
    ) -> Option<()> {
        let converted = match converted {
            Some(converted) => converted,
            None => openai::to_message(message).ok()?,
        };
        point.pass(&converted.content_hash());
        self.out.push(encode(message)?);
        Some(())
    }
}

/// A client body located against the remembered walks.
pub struct ChatLocated {
    split: Split,
    head: Arc<ChatHead>,
    walk: Option<ChatWalk>,
    /// Leading messages `body` shares with `walk`'s body.
    shared: usize,
    /// The body's messages when it was decoded whole (no walk to extend).
    messages: Option<Vec<ChatMessage>>,
    generation: u64,
}

impl ChatLocated {
    /// The client's request outside its conversation.
    pub fn head(&self) -> &ChatHead {
        &self.head
    }

    /// The client's first message after its instructions, in the neutral model: remembered
    /// when the body repeats it, decoded otherwise.
    pub fn first_message(&self, body: &[u8]) -> Option<Arc<Message>> {
        let at = self.head.instructions();
        if self.shared > at
            && let Some(first) = self.walk.as_ref().and_then(|walk| walk.first.clone())
        {
            return Some(first);
        }
        let message = match &self.messages {
            Some(messages) => messages.get(at)?.clone(),
            None => decode_alone(
                body.get(self.split.ranges.get(at)?.clone())?,
                ChatMessage::decode,
            )?,
        };
        openai::to_message(&message).ok().map(Arc::new)
    }
}

/// What a walk gives the request.
pub struct ChatWalked {
    pub body: Bytes,
    /// Where the message list lies in `body`.
    pub list: Range<usize>,
    pub head: Arc<ChatRequest>,
    pub point: Point,
    /// Client messages walked for this request: those after the ones it shares with a
    /// remembered body.
    pub walked_messages: usize,
}

/// Recent Chat walks, most recent last, within a byte budget.
#[derive(Debug)]
pub struct ChatWalks {
    queue: WalkQueue<ChatWalk>,
}

impl ChatWalks {
    /// Remembers walks holding at most `budget_bytes` in all.
    pub fn new(budget_bytes: usize) -> Self {
        Self {
            queue: WalkQueue::new(budget_bytes),
        }
    }

    /// Locates `body`'s messages and head against the remembered walks, or decodes it
    /// whole; `None` for a body the whole preparation must judge.
    pub fn locate(&self, body: &Bytes) -> Option<ChatLocated> {
        let generation = self.queue.generation();
        if let Some((walk, equal)) = self.queue.take_longest_prefix(body)
            && let Some((split, shared)) =
                Split::extend(&walk.split.ranges, walk.split.open, body, equal)
            && shared > walk.head.instructions()
            && split.same_outside(body, &walk.split, &walk.body)
        {
            return Some(ChatLocated {
                split,
                head: Arc::clone(&walk.head),
                walk: Some(walk),
                shared,
                messages: None,
                generation,
            });
        }
        let split = Split::scan(body)?;
        let mut request = ChatRequest::decode(body, usize::MAX).ok()?;
        let messages = std::mem::take(&mut request.messages);
        if split.ranges.len() != messages.len() {
            return None;
        }
        let head = Arc::new(ChatHead::new(request, &messages)?);
        Some(ChatLocated {
            split,
            head,
            walk: None,
            shared: 0,
            messages: Some(messages),
            generation,
        })
    }

    /// Walks `located` (the client `body`, whose anchors hash `project` and whose first
    /// message after the instructions is `first`) from where its remembered walk may
    /// resume, and remembers the result; `Ok(None)` when a message does not decode, convert or encode
    /// alone.
    pub fn walk(
        &self,
        tx: &ReadTx<'_>,
        body: &Bytes,
        located: ChatLocated,
        project: Option<ProjectId>,
        first: Arc<Message>,
        used: &mut Used,
    ) -> Result<Option<ChatWalked>, StoreError> {
        let ChatLocated {
            split,
            head,
            walk,
            shared,
            messages,
            generation,
        } = located;
        let instructions = head.instructions();
        let mut walk = walk.filter(|walk| walk.project == project);
        let resumable = match &mut walk {
            Some(walk) => resume(
                tx,
                shared - instructions,
                &mut walk.steps,
                &mut walk.out,
                &mut walk.found,
                used,
            )?,
            None => false,
        };
        let mut walk = match walk {
            Some(walk) if resumable => walk,
            _ => ChatWalk {
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
        let mut point = match walk.steps.last() {
            Some(step) => step.point.clone(),
            None => Point::start(WIRE, project),
        };
        let start = instructions + walk.steps.len();
        let mut decoded = messages.map(|messages| messages.into_iter().skip(start));
        for range in split.ranges.get(start..).unwrap_or_default() {
            let message = match &mut decoded {
                Some(decoded) => decoded.next(),
                None => body
                    .get(range.clone())
                    .and_then(|bytes| decode_alone(bytes, ChatMessage::decode)),
            };
            let Some(message) = message else {
                return Ok(None);
            };
            if walk.pass(tx, &mut point, message, used)?.is_none() {
                return Ok(None);
            }
            walk.steps.push(Step {
                point: point.clone(),
                progress: Progress::of(&walk.out, &walk.found),
            });
        }
        let leading = head.leading.iter().chain(&walk.out);
        let (body_out, list) = assemble(&head.before, leading, &head.after);
        let walked = ChatWalked {
            body: body_out,
            list,
            head: Arc::clone(&head.prepared),
            point,
            walked_messages: split.ranges.len().saturating_sub(start),
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
#[path = "chat_walks_tests.rs"]
mod tests;
