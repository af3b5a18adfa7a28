//! The Responses side of the proxy's tools: the request made ready, and the stored
//! exchanges put back.
//!
//! As on the other wires ([`super::prepare`], [`super::chat`]), our tools go after the
//! client's and the guidance after the client's instructions, the same bytes on every
//! request ([`mc_agent_tools::responses_exchange`]). The hidden rounds go before the run of items
//! the client got as the answer, and our results right after it, before the client's own
//! outputs.

use axum::http::HeaderMap;
use mc_agent_tools::offers_ours;
use mc_agent_tools::responses_splice::{ResponsesPrepared, splice_whole};
use mc_agent_tools::splice::Used;
use mc_engine::tools::offer;
use mc_wire::responses::ResponsesRequest;

use super::prepare::{splice_failed, tool_project};
use super::serve_choice::served_here;
use crate::app::App;
use crate::chunked_body::ChunkedBody;
use crate::client_request::ClientRequest;
use crate::clock::now_ms;
use crate::provider::{Provider, ProxyError};
use crate::render_responses::conversation;
use crate::side_call;

/// Prepares a Responses request for the proxy's tools, or `None` when this call does not get
/// them (see [`super::prepare::prepare`]); a stateful request (the history at the provider)
/// never does.
///
/// A client with tools of its own is prepared by its new items
/// ([`mc_agent_tools::responses_walks`]); one without (a host's side call is told by its whole
/// conversation), a bare string input, a stateful request, or a body whose items do not
/// decode alone, is prepared whole (and a stateful one then refused).
pub fn prepare_responses(
    app: &App,
    headers: &HeaderMap,
    body: &ChunkedBody,
) -> Result<Option<ResponsesPrepared>, ProxyError> {
    let Ok(engine) = app.engine() else {
        return Ok(None);
    };
    if !served_here(engine.config().tools.mode, headers, None) {
        return Ok(None);
    }
    let offered = offer(engine.config().compaction.enabled);
    if let Some(located) = app.responses_walks.locate(body, offered) {
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
            let walks = &app.responses_walks;
            let walked = engine
                .store()
                .read(|tx| walks.walk(tx, body, located, project.clone(), first, &mut used))
                .map_err(|error| splice_failed(Provider::OpenAiResponses, &error))?;
            if let Some(walked) = walked {
                tracing::trace!(
                    walked = walked.walked_entries,
                    "prepared by the entries after those a remembered body shares"
                );
                used.record(engine.store());
                return Ok(Some(ResponsesPrepared {
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

/// [`prepare_responses`] by a decode of the whole body and a walk from its start.
fn prepare_whole(
    app: &App,
    headers: &HeaderMap,
    body: &ChunkedBody,
) -> Result<Option<ResponsesPrepared>, ProxyError> {
    let Ok(engine) = app.engine() else {
        return Ok(None);
    };
    // A body that does not decode is the pass's to refuse.
    let Ok(request) = ResponsesRequest::decode(&body.to_bytes(), usize::MAX) else {
        return Ok(None);
    };
    if request.stateful_reason().is_some() {
        return Ok(None);
    }
    let turns = conversation(&request);
    let client = ClientRequest::Responses(request);
    if client.offers_our_tools() || side_call::recognise(headers, &client, &turns).is_some() {
        return Ok(None);
    }
    let project = tool_project(app, headers, client.system_texts(), &turns);
    let ClientRequest::Responses(request) = client else {
        return Ok(None);
    };
    let mut used = Used::at(now_ms());
    let prepared = engine
        .store()
        .read(|tx| {
            let offered = offer(engine.config().compaction.enabled);
            splice_whole(tx, project.clone(), request, offered, &mut used)
        })
        .map_err(|error| splice_failed(Provider::OpenAiResponses, &error))?;
    used.record(engine.store());
    Ok(Some(ResponsesPrepared {
        project,
        ..prepared
    }))
}
