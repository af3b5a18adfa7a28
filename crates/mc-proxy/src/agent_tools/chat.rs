//! The Chat Completions side of the proxy's tools: the request made ready, and the stored
//! exchanges put back.
//!
//! As on the Anthropic wire ([`super::prepare`], [`super::splice`]), our tools go after the
//! client's and the guidance after the client's instructions, as one more leading `system`
//! message, the same bytes on every request. Chat answers a call with a `tool` message of its
//! own, so our results are put back right after the answer that made the calls, before the
//! client's own `tool` messages.

use axum::http::HeaderMap;
use bytes::Bytes;
use mc_core::breakpoints::CacheTtlChoice;
use mc_core::{HashChain, Message, ProjectId};
use mc_engine::tools::TOOL_GUIDANCE;
use mc_store::{ReadTx, StoreError};
use mc_wire::openai::{self, ChatMessage, ChatRequest, ChatRole, ChatTool};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::prepare::{splice_failed, tool_project};
use super::serve_choice::served_here;
use crate::app::App;
use crate::chat_incremental::ChatDecoded;
use crate::client_request::ClientRequest;
use crate::clock::now_ms;
use crate::pass_decode::DecodedCall;
use crate::provider::{Provider, ProxyError};
use crate::render_openai::instruction_count;
use crate::side_call;
use mc_agent_tools::answer_key::{answer_key, is_answer};
use mc_agent_tools::splice::{Point, Used, stored};
use mc_agent_tools::{SPECS, offers_ours};

/// The wire's name in anchors: a Chat splice is never read as an Anthropic one.
const WIRE: &str = "openai-chat";

/// One stored exchange of a Chat conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatSplice {
    /// The rounds the client never saw: each answer that called only our tools, then one
    /// `tool` message per call.
    pub before: Vec<ChatMessage>,
    /// The answer as the model gave it, when the client got it otherwise (without our
    /// calls, or after the text of the hidden rounds, which a live stream showed).
    pub full_answer: Option<ChatMessage>,
    /// The key of the answer as the client got it ([`super::answer_key`]); a content hash
    /// (hex) in exchanges stored before keys.
    pub client_answer: String,
    /// The `tool` messages answering our calls in the answer.
    pub results: Vec<ChatMessage>,
}

/// A Chat request made ready for the pass.
pub struct ChatPrepared {
    /// The request with the hidden exchanges spliced in, our tools and the guidance.
    pub request: ChatRequest,
    /// Where the conversation stands after its last message.
    pub point: Point,
    /// The project our tools act in.
    pub project: Option<ProjectId>,
    /// The request as the pass reads it (a copy, with its conversation in the neutral model
    /// and its chain), made from what the preparation decoded, converted and hashed, so the
    /// pass needs no encoding of `request` to decode again; taken by the pass.
    pub decoded: Option<Box<DecodedCall>>,
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
    // Decoded by its new messages when it extends a remembered request; a body that does
    // not decode is the pass's to refuse.
    let Ok(decoded) = app.recent_chats.decode(body) else {
        return Ok(None);
    };
    let ChatDecoded {
        request,
        conversation: neutral,
        chain,
        layout,
    } = decoded;
    let theirs = request.tools.iter().flatten().filter_map(ChatTool::name);
    if offers_ours(theirs) {
        return Ok(None);
    }
    // The client's request, as it sent it, for its next one; what follows changes it.
    if let Some(layout) = layout {
        app.recent_chats
            .remember(layout, request.messages.clone(), neutral.clone(), chain);
    }
    let client = ClientRequest::OpenAi(request);
    if side_call::recognise(headers, &client, &neutral).is_some() {
        return Ok(None);
    }
    let project = tool_project(app, headers, &client, &neutral);
    let ClientRequest::OpenAi(mut request) = client else {
        return Ok(None);
    };
    let instructions = instruction_count(&request);
    let turns = request.messages.split_off(instructions);
    let mut used = Used::at(now_ms());
    let spliced = engine
        .store()
        .read(|tx| splice_chat(tx, project.clone(), turns, neutral, &mut used))
        .map_err(|error| splice_failed(Provider::OpenAi, &error))?;
    used.record(engine.store());
    request
        .messages
        .push(ChatMessage::text(ChatRole::System, TOOL_GUIDANCE));
    request.messages.extend(spliced.turns);
    let tools = request.tools.get_or_insert_with(Vec::new);
    for spec in SPECS.iter() {
        let definition = json!({"type": "function", "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": Value::Object(spec.input_schema.clone()),
        }});
        if let Value::Object(raw) = definition {
            tools.push(ChatTool { raw });
        }
    }
    let decoded = spliced.conversation.map(|conversation| {
        Box::new(DecodedCall {
            client: ClientRequest::OpenAi(request.clone()),
            conversation,
            chain: spliced.chain,
            client_ttl: CacheTtlChoice::Default,
            layout: None,
        })
    });
    Ok(Some(ChatPrepared {
        request,
        point: spliced.point,
        project,
        decoded,
    }))
}

/// The messages after the instructions with every stored exchange put back, and what the
/// pass would read of them.
struct Spliced {
    turns: Vec<ChatMessage>,
    /// Where the conversation stands after them.
    point: Point,
    /// Their neutral forms; `None` when one does not convert (the pass then decodes the
    /// body itself and says why it refuses it).
    conversation: Option<Vec<Message>>,
    /// Their hash chain (the links `point` passed).
    chain: HashChain,
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
        conversation: Some(Vec::with_capacity(turns.len())),
        chain: HashChain::default(),
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
                match openai::to_message(&full) {
                    Ok(full_converted) => converted = full_converted,
                    // The pass reads the body itself, and refuses it.
                    Err(_) => spliced.conversation = None,
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
    /// point and the chain past it.
    fn push(&mut self, message: ChatMessage, converted: Option<Message>) {
        let converted = converted.or_else(|| openai::to_message(&message).ok());
        match converted {
            Some(converted) => {
                let hash = converted.content_hash();
                self.point.pass(&hash);
                self.chain.push(hash);
                if let Some(conversation) = &mut self.conversation {
                    conversation.push(converted);
                }
            }
            None => self.conversation = None,
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
