//! The Chat Completions side of the proxy's tools: the request made ready, and the stored
//! exchanges put back.
//!
//! As on the Anthropic wire ([`super::prepare`], [`super::splice`]), our tools go after the
//! client's and the guidance after the client's instructions, as one more leading `system`
//! message, the same bytes on every request. Chat answers a call with a `tool` message of its
//! own, so our results are put back right after the answer that made the calls, before the
//! client's own `tool` messages.

use std::ops::Range;
use std::sync::Arc;

use axum::http::HeaderMap;
use bytes::Bytes;
use mc_core::{Message, ProjectId};
use mc_store::{ReadTx, StoreError};
use mc_wire::openai::{self, ChatMessage, ChatRequest, ChatRole};
use serde_json::json;

use super::chat_exchange::{ChatSplice, WIRE, add_chat_tools, guidance_message};
use super::prepare::{splice_failed, tool_project};
use super::serve_choice::served_here;
use super::walk_steps::list_with;
use crate::app::App;
use crate::client_request::ClientRequest;
use crate::clock::now_ms;
use crate::incremental::KnownStart;
use crate::provider::{Provider, ProxyError};
use crate::render_openai::conversation;
use crate::side_call;
use mc_agent_tools::answer_key::{answer_key, is_answer};
use mc_agent_tools::splice::{Point, Used, stored};
use mc_engine::tools::{Offer, offer};

/// A Chat request made ready for the pass, and what later rounds need of it.
#[derive(Debug, Clone)]
pub struct ChatPrepared {
    /// The request with our tools, its message list empty: the head later rounds are sent
    /// with.
    pub head: Arc<ChatRequest>,
    /// The request with the guidance and the hidden exchanges spliced in, encoded: what the
    /// pass reads instead of the client's body.
    pub body: Bytes,
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
        let prepared = self.body.get(self.list.clone()).unwrap_or(b"[]");
        let list = list_with(prepared, &appended, (before.len(), after.len()));
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

/// Prepares a Chat request for the proxy's tools, or `None` when this call does not get
/// them (see [`super::prepare::prepare`]).
///
/// A client with tools of its own is prepared by its new messages ([`super::chat_walks`]);
/// one without (a host's side call is told by its whole conversation), or a body whose
/// messages do not decode alone, is prepared whole.
pub fn prepare_chat(
    app: &App,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Option<ChatPrepared>, ProxyError> {
    let Ok(engine) = app.engine() else {
        return Ok(None);
    };
    if !served_here(engine.config().tools.mode, headers, None) {
        return Ok(None);
    }
    let offered = offer(engine.config().compaction.enabled);
    if let Some(located) = app.chat_walks.locate(body, offered) {
        let client = &located.head().client;
        if client.offers_our_tools() {
            return Ok(None);
        }
        if client.has_tools()
            && let Some(first) = located.first_message(body)
        {
            let project = tool_project(app, headers, client, std::slice::from_ref(&*first));
            let mut used = Used::at(now_ms());
            let walks = &app.chat_walks;
            let walked = engine
                .store()
                .read(|tx| walks.walk(tx, body, located, project.clone(), first, &mut used))
                .map_err(|error| splice_failed(Provider::OpenAi, &error))?;
            if let Some(walked) = walked {
                tracing::trace!(
                    walked = walked.walked_entries,
                    "prepared by the entries after those a remembered body shares"
                );
                used.record(engine.store());
                return Ok(Some(ChatPrepared {
                    head: walked.head,
                    body: walked.body,
                    list: walked.list,
                    point: walked.point,
                    project,
                    known: walked.known,
                }));
            }
        }
    }
    prepare_whole(app, headers, body)
}

/// [`prepare_chat`] by a decode of the whole body and a walk from its start.
fn prepare_whole(
    app: &App,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Option<ChatPrepared>, ProxyError> {
    let Ok(engine) = app.engine() else {
        return Ok(None);
    };
    // A body that does not decode or convert is the pass's to refuse.
    let Ok(request) = ChatRequest::decode(body, usize::MAX) else {
        return Ok(None);
    };
    let Ok(neutral) = conversation(&request) else {
        return Ok(None);
    };
    let client = ClientRequest::OpenAi(request);
    if client.offers_our_tools() || side_call::recognise(headers, &client, &neutral).is_some() {
        return Ok(None);
    }
    let project = tool_project(app, headers, &client, &neutral);
    let ClientRequest::OpenAi(request) = client else {
        return Ok(None);
    };
    let mut used = Used::at(now_ms());
    let prepared = engine
        .store()
        .read(|tx| {
            let offered = offer(engine.config().compaction.enabled);
            splice_whole(tx, project.clone(), request, neutral, offered, &mut used)
        })
        .map_err(|error| splice_failed(Provider::OpenAi, &error))?;
    used.record(engine.store());
    Ok(Some(ChatPrepared {
        project,
        ..prepared
    }))
}

/// A whole client request (`neutral`, its conversation after the instructions) with its
/// exchanges put back, the guidance and our tools added, encoded: the reference every
/// walked preparation must equal byte for byte.
pub(super) fn splice_whole(
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
        body,
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

/// An assistant message for the conversation from an answer's message: its content and
/// calls only (response-only fields such as `annotations` are not request fields).
pub fn assistant_turn(message: &ChatMessage, calls: Vec<openai::ToolCall>) -> ChatMessage {
    let mut turn = ChatMessage::new(ChatRole::Assistant, message.content.clone());
    if turn.content.is_none() {
        turn.set_null_content();
    }
    turn.tool_calls = (!calls.is_empty()).then_some(calls);
    turn
}

#[cfg(test)]
mod tests;
