//! A Chat Completions request with our tools: the guidance after the client's instructions
//! (one more leading `system` message), our tools after the client's, and every stored
//! exchange put back, encoded; the same bytes on every request. Chat answers a call with a
//! `tool` message of its own, so our results go right after the answer that made the calls,
//! before the client's own `tool` messages.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use mc_core::{Message, ProjectId};
use mc_engine::tools::Offer;
use mc_store::{ReadTx, StoreError};
use mc_wire::chunked_body::ChunkedBody;
use mc_wire::openai::{self, ChatMessage, ChatRequest, ChatRole};
use mc_wire::recent_bodies::KnownStart;
use serde_json::json;

use crate::answer_key::{answer_key, is_answer};
use crate::chat_exchange::{ChatSplice, WIRE, add_chat_tools, guidance_message};
use crate::splice::{Point, Used, stored};
use crate::walk_steps::list_with;

/// A Chat request made ready for the pass, and what later rounds need of it.
#[derive(Debug, Clone)]
pub struct ChatPrepared {
    /// The request with our tools, its message list empty: the head later rounds are sent
    /// with.
    pub head: Arc<ChatRequest>,
    /// The request with the guidance and the hidden exchanges spliced in, encoded: what the
    /// pass reads instead of the client's body.
    pub body: ChunkedBody,
    /// Where the message list (`[` … `]`) lies in `body`.
    pub list: Range<usize>,
    /// What `body` is known to share with the previous prepared body (the walk's).
    pub known: Option<KnownStart>,
    /// Where the conversation stands after its last message.
    pub point: Point,
    /// The project our tools act in.
    pub project: Option<ProjectId>,
}

impl ChatPrepared {
    /// The body of the next round: the prepared messages, then `hidden` (the rounds run
    /// here so far), with `tool_choice` `none` on the `last` round allowed.
    pub fn next_round(&self, hidden: &[ChatMessage], last: bool) -> Bytes {
        let mut next = ChatRequest::clone(&self.head);
        if last {
            next.rest.insert("tool_choice".to_owned(), json!("none"));
        }
        let (before, after) = next.encode_around_messages();
        next.messages = hidden.to_vec();
        let appended = next.encode();
        let prepared = self
            .body
            .get(self.list.clone())
            .unwrap_or(Cow::Borrowed(b"[]"));
        let list = list_with(&prepared, &appended, (before.len(), after.len()));
        Bytes::from(next.encode_with_messages(&list))
    }
}

/// The key of a Chat answer as the client got it ([`super::answer_key`]); `None` for a
/// message the pass will refuse anyway.
pub fn chat_answer_key(message: &ChatMessage) -> Option<String> {
    openai::to_message(message)
        .ok()
        .map(|message| answer_key(&message))
}

/// A whole client request (`neutral`, its conversation after the instructions) with its
/// exchanges put back, the guidance and our tools added, encoded: the reference every
/// walked preparation must equal byte for byte.
pub fn splice_whole(
    tx: &ReadTx<'_>,
    project: Option<ProjectId>,
    mut request: ChatRequest,
    neutral: Vec<Message>,
    offer: Offer,
    used: &mut Used,
) -> Result<ChatPrepared, StoreError> {
    let instructions = request.instruction_count();
    let turns = request.messages.split_off(instructions);
    let spliced = splice_chat(tx, project, turns, neutral, used)?;
    request.messages.push(guidance_message(offer));
    request.messages.extend(spliced.turns);
    add_chat_tools(&mut request, offer);
    let body = Bytes::from(request.encode());
    request.messages = Vec::new();
    let (before, after) = request.encode_around_messages();
    let list = before.len()..body.len().saturating_sub(after.len());
    Ok(ChatPrepared {
        head: Arc::new(request),
        body: body.into(),
        list,
        point: spliced.point,
        project: None,
        known: None,
    })
}

/// The messages after the instructions with every stored exchange put back.
struct Spliced {
    turns: Vec<ChatMessage>,
    /// Where the conversation stands after them.
    point: Point,
}

/// `turns` (the messages after the instructions, `neutral` their neutral forms) with every
/// stored exchange put back.
fn splice_chat(
    tx: &ReadTx<'_>,
    project: Option<ProjectId>,
    turns: Vec<ChatMessage>,
    neutral: Vec<Message>,
    used: &mut Used,
) -> Result<Spliced, StoreError> {
    let mut spliced = Spliced {
        turns: Vec::with_capacity(turns.len()),
        point: Point::start(WIRE, project),
    };
    for (mut message, mut converted) in turns.into_iter().zip(neutral) {
        let mut after = Vec::new();
        if message.role == ChatRole::Assistant
            && let Some(found) = stored::<ChatSplice>(tx, &spliced.point.anchor())?
            && is_answer(&found.splice.client_answer, &converted)
        {
            used.note(&found);
            let splice = found.splice;
            for hidden in splice.before {
                spliced.push(hidden, None);
            }
            if let Some(full) = splice.full_answer {
                if let Ok(full_converted) = openai::to_message(&full) {
                    converted = full_converted;
                }
                message = full;
            }
            after = splice.results;
        }
        spliced.push(message, Some(converted));
        for result in after {
            spliced.push(result, None);
        }
    }
    Ok(spliced)
}

impl Spliced {
    /// Appends `message` (`converted`, its neutral form, when already known) and moves the
    /// point past it; a message that does not convert leaves the point where it is (the
    /// pass refuses the body it is in).
    fn push(&mut self, message: ChatMessage, converted: Option<Message>) {
        let converted = converted.or_else(|| openai::to_message(&message).ok());
        if let Some(converted) = converted {
            self.point.pass(&converted.content_hash());
        }
        self.turns.push(message);
    }
}

#[cfg(test)]
#[path = "chat_splice_tests.rs"]
mod tests;
