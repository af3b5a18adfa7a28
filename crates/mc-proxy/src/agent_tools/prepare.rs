//! The request as it goes into the pass when the proxy serves the tools: the stored hidden
//! exchanges spliced back, our tools after the client's, the guidance last in the system
//! prompt.
//!
//! Both additions are constants appended at the end of their list, so every request of a
//! session carries the same tools and system bytes and the cached prefix holds; appending
//! (rather than putting ours first) leaves the client's own prefix as it was.

use std::sync::Arc;

use axum::http::HeaderMap;
use mc_agent_tools::anthropic_splice::{Prepared, splice_whole};
use mc_agent_tools::anthropic_walks::Start;
use mc_agent_tools::offers_ours;
use mc_agent_tools::splice::Used;
use mc_core::Message;
use mc_core::ProjectId;
use mc_core::config::ToolsMode;
use mc_engine::tools::offer;
use mc_wire::anthropic::{self, MessagesRequest};

use super::serve_choice::served_here;
use crate::app::App;
use crate::chunked_body::ChunkedBody;
use crate::client_request::{ClientRequest, first_message_texts};
use crate::clock::now_ms;
use crate::provider::{ErrorKind, Provider, ProxyError};
use crate::side_call;

/// Prepares an Anthropic request for the proxy's tools, or `None` when this call does not
/// get them: another tools mode, a host's side call, a client that already offers our
/// tools ([`super::offers_ours`]), or a body the pass will refuse anyway (it says why).
///
/// A follow-up is prepared by its new messages ([`mc_agent_tools::anthropic_walks`]); a body that does
/// not split into messages, or whose client sends no tools (a host's side call is told by
/// its whole conversation), is decoded whole.
pub fn prepare(
    app: &App,
    headers: &HeaderMap,
    body: &ChunkedBody,
) -> Result<Option<Prepared>, ProxyError> {
    let Ok(engine) = app.engine() else {
        return Ok(None);
    };
    let mode = engine.config().tools.mode;
    if let Some(located) = app.recent_walks.locate(body) {
        let request = located.request();
        if !gets_ours(mode, headers, &request) {
            return Ok(None);
        }
        let client = ClientRequest::Anthropic(request);
        if client.has_tools()
            && let Some(first) = located.first_message(body)
        {
            let project = tool_project(
                app,
                headers,
                client.system_texts(),
                std::slice::from_ref(&*first),
            );
            let start = Start {
                project: project.clone(),
                first,
                offer: offer(engine.config().compaction.enabled),
            };
            let mut used = Used::at(now_ms());
            let walked = engine
                .store()
                .read(|tx| app.recent_walks.walk(tx, body, located, start, &mut used))
                .map_err(|error| splice_failed(Provider::Anthropic, &error))?;
            if let Some(walked) = walked {
                used.record(engine.store());
                return Ok(Some(Prepared {
                    head: walked.head,
                    body: walked.body,
                    list: walked.list,
                    known: walked.known,
                    point: walked.point,
                    project,
                }));
            }
        }
    }
    prepare_whole(app, headers, body)
}

/// Whether `request` gets the proxy's tools under `mode`: served here for its client, and
/// not a client that already offers them.
fn gets_ours(mode: ToolsMode, headers: &HeaderMap, request: &MessagesRequest) -> bool {
    let theirs = request
        .tools
        .iter()
        .flatten()
        .map(|tool| tool.name.as_str());
    served_here(mode, headers, request.metadata_user_id()) && !offers_ours(theirs)
}

/// [`prepare`] by a decode of the whole body and a walk from its start.
fn prepare_whole(
    app: &App,
    headers: &HeaderMap,
    body: &ChunkedBody,
) -> Result<Option<Prepared>, ProxyError> {
    let Ok(engine) = app.engine() else {
        return Ok(None);
    };
    let Ok(request) = MessagesRequest::decode(&body.to_bytes(), usize::MAX) else {
        return Ok(None);
    };
    if !gets_ours(engine.config().tools.mode, headers, &request) {
        return Ok(None);
    }
    let conversation = anthropic::to_conversation(&request);
    let client = ClientRequest::Anthropic(Arc::new(request));
    if side_call::recognise(headers, &client, &conversation).is_some() {
        return Ok(None);
    }
    let project = tool_project(app, headers, client.system_texts(), &conversation);
    let ClientRequest::Anthropic(request) = client else {
        return Ok(None);
    };
    let request = Arc::unwrap_or_clone(request);
    let mut used = Used::at(now_ms());
    let spliced = engine
        .store()
        .read(|tx| {
            splice_whole(
                tx,
                project.clone(),
                request,
                offer(engine.config().compaction.enabled),
                &mut used,
            )
        })
        .map_err(|error| splice_failed(Provider::Anthropic, &error))?;
    used.record(engine.store());
    Ok(Some(Prepared { project, ..spliced }))
}

/// The project our tools act in for a client whose instructions say `system_texts`: the one
/// the proxy resolves for the session.
pub(super) fn tool_project(
    app: &App,
    headers: &HeaderMap,
    system_texts: Vec<&str>,
    conversation: &[Message],
) -> Option<ProjectId> {
    app.projects.resolve(
        headers,
        system_texts
            .into_iter()
            .chain(first_message_texts(conversation)),
    )
}

/// The refusal when the stored tool exchanges cannot be read: the request is not sent,
/// since without them it would carry calls that have no results.
pub(super) fn splice_failed(provider: Provider, error: &dyn std::fmt::Display) -> ProxyError {
    ProxyError::new(
        provider,
        ErrorKind::Unavailable,
        format!(
            "the context store failed while reading this conversation's tool exchanges ({error}); the request was not sent"
        ),
    )
}
