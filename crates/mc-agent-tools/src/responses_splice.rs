//! A Responses request with our tools: the guidance after the client's instructions, our
//! tools after the client's, and every stored exchange put back, encoded; the same bytes on
//! every request. The hidden rounds go before the run of items the client got as the
//! answer, and our results right after it, before the client's own outputs.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use mc_core::ProjectId;
use mc_engine::tools::Offer;
use mc_store::{ReadTx, StoreError};
use mc_wire::chunked_body::ChunkedBody;
use mc_wire::recent_bodies::KnownStart;
use mc_wire::responses::{Content, Input, Item, MessageItem, MessageRole, ResponsesRequest};
use serde_json::json;

use crate::responses_exchange::{
    ResponsesSplice, WIRE, add_responses_tools, by_model, first_run_len, guidance_item,
    is_client_answer, pass,
};
use crate::splice::{Point, Used, stored};
use crate::walk_steps::list_with;

/// A Responses request made ready for the pass, and what later rounds need of it.
#[derive(Debug, Clone)]
pub struct ResponsesPrepared {
    /// The request with our tools, its item list empty: the head later rounds are sent
    /// with.
    pub head: Arc<ResponsesRequest>,
    /// The request with the guidance and the hidden exchanges spliced in, encoded: what the
    /// pass reads instead of the client's body.
    pub body: ChunkedBody,
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
        let prepared = self
            .body
            .get(self.list.clone())
            .unwrap_or(Cow::Borrowed(b"[]"));
        let list = list_with(&prepared, &appended, (before.len(), after.len()));
        let mut body = before;
        body.extend_from_slice(&list);
        body.extend_from_slice(&after);
        Bytes::from(body)
    }
}

/// A whole client request with its exchanges put back, the guidance and our tools added,
/// encoded (a bare string input as the one user item it stands for): the reference every
/// walked preparation must equal byte for byte.
pub fn splice_whole(
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
        body: body.into(),
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
