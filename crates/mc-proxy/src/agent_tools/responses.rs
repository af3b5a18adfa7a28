//! The Responses side of the proxy's tools: the request made ready, and the stored
//! exchanges put back.
//!
//! As on the other wires ([`super::prepare`], [`super::chat`]), our tools go after the
//! client's and the guidance after the client's instructions, as one more leading `developer`
//! message (the `instructions` field is left as the client wrote it), the same bytes on
//! every request. A Responses conversation is a flat list of items; the model's answer is
//! the run of items it wrote in one turn (reasoning, messages, calls), which the neutral
//! model reads as one assistant message, so the splice works on those runs: the hidden rounds
//! go before the run the client got, and our results right after it, before the client's own
//! outputs.

use axum::http::HeaderMap;
use bytes::Bytes;
use mc_core::breakpoints::CacheTtlChoice;
use mc_core::{ContentHash, HashChain, ProjectId, Role};
use mc_engine::tools::TOOL_GUIDANCE;
use mc_store::{ReadTx, StoreError};
use mc_wire::responses::{
    self, Content, Input, Item, MessageItem, MessageRole, ResponsesRequest, ResponsesTool,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::prepare::{splice_failed, tool_project};
use super::serve_choice::served_here;
use crate::app::App;
use crate::client_request::{ClientRequest, responses_tool_names};
use crate::clock::now_ms;
use crate::pass_decode::DecodedCall;
use crate::provider::{Provider, ProxyError};
use crate::render_responses::{conversation, instruction_count};
use crate::side_call;
use mc_agent_tools::answer_key::{answer_key, is_answer, is_key};
use mc_agent_tools::splice::{Point, Used, stored};
use mc_agent_tools::{SPECS, offers_ours};

/// The wire's name in anchors: a Responses splice is never read as another wire's.
const WIRE: &str = "openai-responses";

/// One stored exchange of a Responses conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponsesSplice {
    /// The rounds the client never saw: each run of items that called only our tools, then
    /// one output item per call.
    pub before: Vec<Item>,
    /// The answer's items as the model gave them, when the client got it otherwise (without
    /// our calls, or after the items of the hidden rounds, which a live stream showed).
    pub full_answer: Option<Vec<Item>>,
    /// The key of the answer as the client got it ([`super::answer_key`]); a content hash
    /// (hex) in exchanges stored before keys.
    pub client_answer: String,
    /// How many items the client's answer has: checked only beside a content hash, since a
    /// key already ignores the items a client may drop (reasoning).
    pub client_items: usize,
    /// The output items answering our calls in the answer.
    pub results: Vec<Item>,
}

/// A Responses request made ready for the pass.
pub struct ResponsesPrepared {
    /// The request with the hidden exchanges spliced in, our tools and the guidance.
    pub request: ResponsesRequest,
    /// Where the conversation stands after its last item.
    pub point: Point,
    /// The project our tools act in.
    pub project: Option<ProjectId>,
    /// The request as the pass reads it (a copy, with its conversation and chain), so the
    /// pass needs no encoding of `request` to decode again; taken by the pass.
    pub decoded: Option<Box<DecodedCall>>,
}

/// The content hash of a run of items in the neutral model, when it reads as one message.
pub fn items_hash(items: &[Item]) -> Option<ContentHash> {
    match responses::to_conversation(items).as_slice() {
        [message] => Some(message.content_hash()),
        _ => None,
    }
}

/// The key of a run of items as the client got it ([`super::answer_key`]), when it reads
/// as one message.
pub fn items_answer_key(items: &[Item]) -> Option<String> {
    match responses::to_conversation(items).as_slice() {
        [message] => Some(answer_key(message)),
        _ => None,
    }
}

/// Whether `answer` (a run of model items) is the answer `splice` was stored for.
fn is_client_answer(splice: &ResponsesSplice, answer: &[Item]) -> bool {
    let conversation = responses::to_conversation(answer);
    let [message] = conversation.as_slice() else {
        return false;
    };
    let items_agree = is_key(&splice.client_answer) || splice.client_items == answer.len();
    items_agree && is_answer(&splice.client_answer, message)
}

/// Whether the model wrote `item` (it belongs to an assistant turn).
fn by_model(item: &Item) -> bool {
    responses::item_role(item) == Role::Assistant
}

/// Prepares a Responses request for the proxy's tools, or `None` when this call does not get
/// them (see [`super::prepare::prepare`]); a stateful request (the history at the provider)
/// never does.
pub fn prepare_responses(
    app: &App,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Option<ResponsesPrepared>, ProxyError> {
    let Ok(engine) = app.engine() else {
        return Ok(None);
    };
    // The client's body decoded as the pass would (by its new items on a follow-up); a
    // body that does not decode is the pass's to refuse.
    let Ok(decoded) = app.recent_responses.decode(body) else {
        return Ok(None);
    };
    let mut request = decoded.request;
    let theirs = request
        .tools
        .iter()
        .flatten()
        .flat_map(responses_tool_names);
    if !served_here(engine.config().tools.mode, headers, None)
        || offers_ours(theirs)
        || request.stateful_reason().is_some()
    {
        return Ok(None);
    }
    let text_input = matches!(request.input, Some(Input::Text(_)));
    if let Some(Input::Text(text)) = &request.input {
        let item = MessageItem::new(MessageRole::User, Content::Text(text.clone()));
        request.input = Some(Input::Items(vec![Item::Message(item)]));
    }
    let turns = decoded.conversation;
    let client = ClientRequest::Responses(request);
    if side_call::recognise(headers, &client, &turns).is_some() {
        return Ok(None);
    }
    let project = tool_project(app, headers, &client, &turns);
    let ClientRequest::Responses(mut request) = client else {
        return Ok(None);
    };
    let instructions = instruction_count(&request);
    let mut items = match request.input.take() {
        Some(Input::Items(items)) => items,
        _ => Vec::new(),
    };
    // Remembered as the client sent it, so its next request is decoded by its new items.
    if let Some(layout) = decoded.layout {
        app.recent_responses
            .remember(layout, items.clone(), turns.clone(), decoded.chain.clone());
    }
    let client_turns = items.split_off(instructions);
    let mut used = Used::at(now_ms());
    let (spliced, point, put_back) = engine
        .store()
        .read(|tx| splice_items(tx, project.clone(), client_turns, &mut used))
        .map_err(|error| splice_failed(Provider::OpenAiResponses, &error))?;
    used.record(engine.store());
    let guidance = MessageItem::new(MessageRole::Developer, Content::Text(TOOL_GUIDANCE.into()));
    items.push(Item::Message(guidance));
    items.extend(spliced);
    request.input = Some(Input::Items(items));
    let tools = request.tools.get_or_insert_with(Vec::new);
    for spec in SPECS.iter() {
        let definition = json!({
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "parameters": Value::Object(spec.input_schema.clone()),
        });
        if let Value::Object(raw) = definition {
            tools.push(ResponsesTool { raw });
        }
    }
    // With no exchange put back the prepared conversation is the client's (the guidance
    // joins the instructions).
    let (conversation, chain) = if put_back || text_input {
        let conversation = conversation(&request);
        let chain = HashChain::of(&conversation);
        (conversation, chain)
    } else {
        debug_assert_eq!(conversation(&request), turns);
        (turns, decoded.chain)
    };
    let decoded = Box::new(DecodedCall {
        client: ClientRequest::Responses(request.clone()),
        chain,
        conversation,
        client_ttl: CacheTtlChoice::Default,
        layout: None,
    });
    Ok(Some(ResponsesPrepared {
        request,
        point,
        project,
        decoded: Some(decoded),
    }))
}

/// `turns` (the items after the instructions) with every stored exchange put back, the
/// point after them, and whether any was.
fn splice_items(
    tx: &ReadTx<'_>,
    project: Option<ProjectId>,
    turns: Vec<Item>,
    used: &mut Used,
) -> Result<(Vec<Item>, Point, bool), StoreError> {
    let mut point = Point::start(WIRE, project);
    let mut put_back = false;
    let mut out = Vec::with_capacity(turns.len());
    let mut rest = turns.into_iter().peekable();
    while let Some(item) = rest.next() {
        if !by_model(&item) {
            pass(&mut point, std::slice::from_ref(&item));
            out.push(item);
            continue;
        }
        let mut answer = vec![item];
        while let Some(next) = rest.next_if(by_model) {
            answer.push(next);
        }
        let found = stored::<ResponsesSplice>(tx, &point.anchor())?
            .filter(|found| is_client_answer(&found.splice, &answer));
        let Some(found) = found else {
            pass(&mut point, &answer);
            out.extend(answer);
            continue;
        };
        used.note(&found);
        put_back = true;
        let splice = found.splice;
        let answer = splice.full_answer.unwrap_or(answer);
        for items in [splice.before, answer, splice.results] {
            pass(&mut point, &items);
            out.extend(items);
        }
    }
    Ok((out, point, put_back))
}

/// Moves `point` past `items`, a run of the neutral model's messages at a time: each run of
/// model items, each other item.
fn pass(point: &mut Point, items: &[Item]) {
    let mut start = 0;
    while start < items.len() {
        let mut end = start + 1;
        if by_model(&items[start]) {
            while end < items.len() && by_model(&items[end]) {
                end += 1;
            }
        }
        if let Some(hash) = items_hash(&items[start..end]) {
            point.pass(&hash);
        }
        start = end;
    }
}
