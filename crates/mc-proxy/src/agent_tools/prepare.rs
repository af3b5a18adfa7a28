//! The request as it goes into the pass when the proxy serves the tools: the stored hidden
//! exchanges spliced back, our tools after the client's, the guidance last in the system
//! prompt.
//!
//! Both additions are constants appended at the end of their list, so every request of a
//! session carries the same tools and system bytes and the cached prefix holds; appending
//! (rather than putting ours first) leaves the client's own prefix as it was.

use std::sync::Arc;

use axum::http::HeaderMap;
use bytes::Bytes;
use mc_core::{Message, ProjectId};
use mc_engine::tools::TOOL_GUIDANCE;
use mc_wire::anthropic::{self, BlockContent, ContentBlock, MessagesRequest, Tool};
use serde_json::{Map, Value};

use super::splice::{Point, Used, splice_in};
use super::{SPECS, offers_ours, served_here};
use crate::app::App;
use crate::client_request::{ClientRequest, first_message_texts};
use crate::clock::now_ms;
use crate::provider::{ErrorKind, Provider, ProxyError};
use crate::side_call;

/// A client request made ready for the pass, and what later rounds need of it.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The request with the hidden exchanges spliced in, our tools and the guidance.
    pub request: MessagesRequest,
    /// Its encoding: what the pass reads instead of the client's body.
    pub body: Bytes,
    /// Where the conversation stands after its last message: the anchor of the answer.
    pub point: Point,
    /// The project our tools act in.
    pub project: Option<ProjectId>,
}

/// Prepares an Anthropic request for the proxy's tools, or `None` when this call does not
/// get them: another tools mode, a host's side call, a client that already offers our
/// tools ([`super::offers_ours`]), or a body the pass will refuse anyway (it says why).
pub fn prepare(
    app: &App,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Option<Prepared>, ProxyError> {
    let Ok(engine) = app.engine() else {
        return Ok(None);
    };
    let Ok(request) = MessagesRequest::decode(body, usize::MAX) else {
        return Ok(None);
    };
    let mode = engine.config().tools.mode;
    let theirs = request
        .tools
        .iter()
        .flatten()
        .map(|tool| tool.name.as_str());
    if !served_here(mode, headers, request.metadata_user_id()) || offers_ours(theirs) {
        return Ok(None);
    }
    let conversation = anthropic::to_conversation(&request);
    let client = ClientRequest::Anthropic(Arc::new(request));
    if side_call::recognise(headers, &client, &conversation).is_some() {
        return Ok(None);
    }
    let project = tool_project(app, headers, &client, &conversation);
    let ClientRequest::Anthropic(request) = client else {
        return Ok(None);
    };
    let mut request = Arc::unwrap_or_clone(request);
    let messages = std::mem::take(&mut request.messages);
    let mut used = Used::at(now_ms());
    let (messages, point) = engine
        .store()
        .read(|tx| splice_in(tx, project.clone(), messages, &mut used))
        .map_err(|error| splice_failed(Provider::Anthropic, &error))?;
    used.record(engine.store());
    request.messages = messages;
    add_tools(&mut request);
    let body = Bytes::from(request.encode());
    Ok(Some(Prepared {
        request,
        body,
        point,
        project,
    }))
}

/// The project our tools act in for `client`: the one the proxy resolves for the session.
pub(super) fn tool_project(
    app: &App,
    headers: &HeaderMap,
    client: &ClientRequest,
    conversation: &[Message],
) -> Option<ProjectId> {
    app.projects.resolve(
        headers,
        client
            .system_texts()
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

/// Appends our tools to the client's and the guidance to the system prompt.
fn add_tools(request: &mut MessagesRequest) {
    let tools = request.tools.get_or_insert_with(Vec::new);
    for spec in SPECS.iter() {
        let mut rest = Map::new();
        rest.insert("description".to_owned(), Value::from(spec.description));
        rest.insert(
            "input_schema".to_owned(),
            Value::Object(spec.input_schema.clone()),
        );
        tools.push(Tool::new(spec.name, rest));
    }
    let guidance = ContentBlock::text(TOOL_GUIDANCE);
    request.system = Some(match request.system.take() {
        None => BlockContent::Blocks(vec![guidance]),
        Some(BlockContent::Text(text)) => {
            BlockContent::Blocks(vec![ContentBlock::text(text), guidance])
        }
        Some(BlockContent::Blocks(mut blocks)) => {
            blocks.push(guidance);
            BlockContent::Blocks(blocks)
        }
    });
}
