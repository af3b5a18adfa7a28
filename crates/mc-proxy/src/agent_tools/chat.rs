//! The Chat Completions side of the proxy's tools: the request made ready, and the stored
//! exchanges put back.
//!
//! As on the Anthropic wire ([`super::prepare`], [`super::splice`]), our tools go after the
//! client's and the guidance after the client's instructions, as one more leading `system`
//! message, the same bytes on every request. Chat answers a call with a `tool` message of its
//! own, so our results are put back right after the answer that made the calls, before the
//! client's own `tool` messages.

use axum::http::HeaderMap;
use mc_agent_tools::chat_splice::{ChatPrepared, splice_whole};
use mc_agent_tools::offers_ours;
use mc_agent_tools::splice::Used;
use mc_engine::tools::offer;
use mc_wire::openai::{self, ChatMessage, ChatRequest, ChatRole};

use super::prepare::{splice_failed, tool_project};
use super::serve_choice::served_here;
use crate::app::App;
use crate::chunked_body::ChunkedBody;
use crate::client_request::ClientRequest;
use crate::clock::now_ms;
use crate::provider::{Provider, ProxyError};
use crate::render_openai::conversation;
use crate::side_call;

/// Prepares a Chat request for the proxy's tools, or `None` when this call does not get
/// them (see [`super::prepare::prepare`]).
///
/// A client with tools of its own is prepared by its new messages ([`mc_agent_tools::chat_walks`]);
/// one without (a host's side call is told by its whole conversation), or a body whose
/// messages do not decode alone, is prepared whole.
pub fn prepare_chat(
    app: &App,
    headers: &HeaderMap,
    body: &ChunkedBody,
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
        if offers_ours(client.tool_names()) {
            return Ok(None);
        }
        if client.has_tools()
            && let Some(first) = located.first_message(body)
        {
            let project = tool_project(
                app,
                headers,
                client.instruction_texts(),
                std::slice::from_ref(&*first),
            );
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
    body: &ChunkedBody,
) -> Result<Option<ChatPrepared>, ProxyError> {
    let Ok(engine) = app.engine() else {
        return Ok(None);
    };
    // A body that does not decode or convert is the pass's to refuse.
    let Ok(request) = ChatRequest::decode(&body.to_bytes(), usize::MAX) else {
        return Ok(None);
    };
    let Ok(neutral) = conversation(&request) else {
        return Ok(None);
    };
    let client = ClientRequest::OpenAi(request);
    if client.offers_our_tools() || side_call::recognise(headers, &client, &neutral).is_some() {
        return Ok(None);
    }
    let project = tool_project(app, headers, client.system_texts(), &neutral);
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
