//! What a Responses request gets from the proxy's tools, and what it keeps of them: the
//! guidance item and our tool definitions added to it, the shape of a stored exchange
//! ([`ResponsesSplice`]), and how the conversation's point moves past items. Shared by the
//! whole preparation ([`super::responses`]) and the walked one
//! ([`crate::responses_walks`]), which must write the same bytes.
//!
//! A Responses conversation is a flat list of items; the model's answer is the run of items
//! it wrote in one turn (reasoning, messages, calls), which the neutral model reads as one
//! assistant message, so the point moves a run at a time and an exchange is looked up
//! before each run of model items.

use std::sync::Arc;

use mc_core::{ContentHash, Role};
use mc_engine::tools::Offer;
use mc_wire::responses::{
    self, Content, Item, MessageItem, MessageRole, ResponsesRequest, ResponsesTool,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::answer_key::{answer_key, is_answer, is_key};
use crate::splice::Point;

/// The wire's name in anchors: a Responses splice is never read as another wire's.
pub const WIRE: &str = "openai-responses";

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

/// `offer`'s guidance, as one more leading `developer` item after the client's
/// instructions (the `instructions` field is left as the client wrote it).
pub fn guidance_item(offer: Offer) -> Item {
    Item::Message(MessageItem::new(
        MessageRole::Developer,
        Content::Text(offer.guidance.into()),
    ))
}

/// Appends the tools `offer` names to the client's.
pub fn add_responses_tools(request: &mut ResponsesRequest, offer: Offer) {
    let tools = request.tools.get_or_insert_with(Vec::new);
    for spec in offer.specs {
        let definition = json!({
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "parameters": Value::Object(spec.input_schema.clone()),
        });
        if let Value::Object(raw) = definition {
            tools.push(ResponsesTool { raw: Arc::new(raw) });
        }
    }
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
pub fn is_client_answer(splice: &ResponsesSplice, answer: &[Item]) -> bool {
    let conversation = responses::to_conversation(answer);
    let [message] = conversation.as_slice() else {
        return false;
    };
    let items_agree = is_key(&splice.client_answer) || splice.client_items == answer.len();
    items_agree && is_answer(&splice.client_answer, message)
}

/// Whether the model wrote `item` (it belongs to an assistant turn).
pub fn by_model(item: &Item) -> bool {
    responses::item_role(item) == Role::Assistant
}

/// How many leading items of `items` make one message of the neutral model: a run of model
/// items, or one other item.
pub fn first_run_len(items: &[Item]) -> usize {
    match items.first() {
        Some(first) if by_model(first) => items.iter().take_while(|item| by_model(item)).count(),
        Some(_) => 1,
        None => 0,
    }
}

/// Moves `point` past `items`, a message of the neutral model at a time.
pub fn pass(point: &mut Point, mut items: &[Item]) {
    while !items.is_empty() {
        let (run, rest) = items.split_at(first_run_len(items));
        if let Some(hash) = items_hash(run) {
            point.pass(&hash);
        }
        items = rest;
    }
}
