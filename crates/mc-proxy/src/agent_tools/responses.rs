//! The Responses side of the proxy's tools: the request made ready, and the stored
//! exchanges put back.
//!
//! As on the other wires ([`super::prepare`], [`super::chat`]), our tools go after the
//! client's and the guidance after the client's instructions, the same bytes on every
//! request ([`super::responses_exchange`]). The hidden rounds go before the run of items
//! the client got as the answer, and our results right after it, before the client's own
//! outputs.

use std::ops::Range;
use std::sync::Arc;

use axum::http::HeaderMap;
use bytes::Bytes;
use mc_core::ProjectId;
use mc_store::{ReadTx, StoreError};
use mc_wire::responses::{Content, Input, Item, MessageItem, MessageRole, ResponsesRequest};
use serde_json::json;

use super::prepare::{splice_failed, tool_project};
use super::responses_exchange::{
    ResponsesSplice, WIRE, add_responses_tools, by_model, first_run_len, guidance_item,
    is_client_answer, pass,
};
use super::serve_choice::served_here;
use super::walk_steps::list_with;
use crate::app::App;
use crate::client_request::ClientRequest;
use crate::clock::now_ms;
use crate::incremental::KnownStart;
use crate::provider::{Provider, ProxyError};
use crate::render_responses::conversation;
use crate::side_call;
use mc_agent_tools::splice::{Point, Used, stored};
use mc_engine::tools::{Offer, offer};

/// A Responses request made ready for the pass, and what later rounds need of it.
#[derive(Debug, Clone)]
pub struct ResponsesPrepared {
    /// The request with our tools, its item list empty: the head later rounds are sent
    /// with.
    pub head: Arc<ResponsesRequest>,
    /// The request with the guidance and the hidden exchanges spliced in, encoded: what the
    /// pass reads instead of the client's body.
    pub body: Bytes,
    /// Where the item list (`[` … `]`) lies in `body`.
    pub list: Range<usize>,
    /// What `body` is known to share with the previous prepared body (the walk's).
    pub known: Option<KnownStart>,
    /// Where the conversation stands after its last item.
    pub point: Point,
    /// The project our tools act in.
    pub project: Option<ProjectId>,
}

impl ResponsesPrepared {
    /// The body of the next round: the prepared items, then `hidden` (the rounds run here
    /// so far), with `tool_choice` `none` on the `last` round allowed.
    pub fn next_round(&self, hidden: &[Item], last: bool) -> Bytes {
        let mut next = ResponsesRequest::clone(&self.head);
        if last {
            next.rest.insert("tool_choice".to_owned(), json!("none"));
        }
        let (before, after) = next.encode_around_input();
        next.input = Some(Input::Items(hidden.to_vec()));
        let appended = next.encode();
        let prepared = self.body.get(self.list.clone()).unwrap_or(b"[]");
        let list = list_with(prepared, &appended, (before.len(), after.len()));
        let mut body = before;
        body.extend_from_slice(&list);
        body.extend_from_slice(&after);
        Bytes::from(body)
    }
}

/// Prepares a Responses request for the proxy's tools, or `None` when this call does not get
/// them (see [`super::prepare::prepare`]); a stateful request (the history at the provider)
/// never does.
///
/// A client with tools of its own is prepared by its new items
/// ([`super::responses_walks`]); one without (a host's side call is told by its whole
/// conversation), a bare string input, a stateful request, or a body whose items do not
/// decode alone, is prepared whole (and a stateful one then refused).
pub fn prepare_responses(
    app: &App,
    headers: &HeaderMap,
    body: &Bytes,
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
        if client.offers_our_tools() {
            return Ok(None);
        }
        if client.has_tools()
            && let Some(first) = located.first_message(body)
        {
            let project = tool_project(app, headers, client, std::slice::from_ref(&*first));
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
    body: &Bytes,
) -> Result<Option<ResponsesPrepared>, ProxyError> {
    let Ok(engine) = app.engine() else {
        return Ok(None);
    };
    // A body that does not decode is the pass's to refuse.
    let Ok(request) = ResponsesRequest::decode(body, usize::MAX) else {
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
    let project = tool_project(app, headers, &client, &turns);
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

/// A whole client request with its exchanges put back, the guidance and our tools added,
/// encoded (a bare string input as the one user item it stands for): the reference every
/// walked preparation must equal byte for byte.
pub(super) fn splice_whole(
    tx: &ReadTx<'_>,
    project: Option<ProjectId>,
    mut request: ResponsesRequest,
    offer: Offer,
    used: &mut Used,
) -> Result<ResponsesPrepared, StoreError> {
    let instructions = request.instruction_count();
    let mut items = match request.input.take() {
        Some(Input::Items(items)) => items,
        Some(Input::Text(text)) => {
            let item = MessageItem::new(MessageRole::User, Content::Text(text));
            vec![Item::Message(item)]
        }
        None => Vec::new(),
    };
    let turns = items.split_off(instructions.min(items.len()));
    let (spliced, point) = splice_items(tx, project, turns, used)?;
    items.push(guidance_item(offer));
    items.extend(spliced);
    add_responses_tools(&mut request, offer);
    request.input = Some(Input::Items(items));
    let body = Bytes::from(request.encode());
    request.input = Some(Input::Items(Vec::new()));
    let (before, after) = request.encode_around_input();
    let list = before.len()..body.len().saturating_sub(after.len());
    Ok(ResponsesPrepared {
        head: Arc::new(request),
        body,
        list,
        point,
        project: None,
        known: None,
    })
}

/// `turns` (the items after the instructions) with every stored exchange put back, and the
/// point after them.
fn splice_items(
    tx: &ReadTx<'_>,
    project: Option<ProjectId>,
    turns: Vec<Item>,
    used: &mut Used,
) -> Result<(Vec<Item>, Point), StoreError> {
    let mut point = Point::start(WIRE, project);
    let mut out = Vec::with_capacity(turns.len());
    let mut rest = turns.as_slice();
    while !rest.is_empty() {
        let (run, after) = rest.split_at(first_run_len(rest));
        rest = after;
        let found = match run.first() {
            Some(first) if by_model(first) => stored::<ResponsesSplice>(tx, &point.anchor())?
                .filter(|found| is_client_answer(&found.splice, run)),
            _ => None,
        };
        let Some(found) = found else {
            pass(&mut point, run);
            out.extend_from_slice(run);
            continue;
        };
        used.note(&found);
        let splice = found.splice;
        let answer = splice.full_answer.unwrap_or_else(|| run.to_vec());
        for items in [splice.before, answer, splice.results] {
            pass(&mut point, &items);
            out.extend(items);
        }
    }
    Ok((out, point))
}
