//! The upstream Responses request for a pass.
//!
//! Like Chat, a Responses request carries its instructions up front: the `instructions`
//! field and the leading `system` / `developer` message items (Codex sends its base
//! instructions and permissions as two developer items, OpenCode and Pi a system item).
//! Those are the prompt's fixed prefix: they go up verbatim and identify the prefix, and
//! the engine manages only the items after them. OpenAI caches prefixes on its own (routed
//! by `prompt_cache_key`, which goes up as the client sent it), so there are no breakpoints
//! to place.

use std::collections::HashMap;

use mc_core::tags::untagged;
use mc_core::{Message, Part, Role};
use mc_engine::PassOutcome;
use mc_wire::responses::{
    self, Content, ContentPart, Input, Item, MessageItem, MessageRole, ResponsesRequest,
};

/// The request's items; a bare string input is one user message.
fn items(request: &ResponsesRequest) -> &[Item] {
    match &request.input {
        Some(Input::Items(items)) => items,
        Some(Input::Text(_)) | None => &[],
    }
}

/// How many leading items are instructions.
pub fn instruction_count(request: &ResponsesRequest) -> usize {
    items(request)
        .iter()
        .take_while(|item| {
            matches!(item, Item::Message(message)
                if matches!(message.role, MessageRole::System | MessageRole::Developer))
        })
        .count()
}

/// The conversation after the instructions, in the neutral model.
pub fn conversation(request: &ResponsesRequest) -> Vec<Message> {
    match &request.input {
        Some(Input::Text(text)) => vec![Message::new(Role::User, vec![Part::text(text.clone())])],
        Some(Input::Items(items)) => {
            responses::to_conversation(&items[instruction_count(request)..])
        }
        None => Vec::new(),
    }
}

/// The instructions' texts: the `instructions` field, then the leading items' texts.
pub fn system_texts(request: &ResponsesRequest) -> Vec<&str> {
    let mut texts: Vec<&str> = request.instructions().into_iter().collect();
    for item in &items(request)[..instruction_count(request)] {
        let Item::Message(message) = item else {
            continue;
        };
        match &message.content {
            Content::Text(text) => texts.push(text),
            Content::Parts(parts) => texts.extend(parts.iter().filter_map(|part| match part {
                ContentPart::Text(part) => Some(part.text.as_str()),
                ContentPart::Refusal(_) | ContentPart::Other(_) => None,
            })),
        }
    }
    texts
}

/// A stable identity of the instructions and tools.
pub fn prefix_identity(request: &ResponsesRequest) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(request.instructions().unwrap_or("").as_bytes());
    hasher.update(b"\0");
    let instructions = &items(request)[..instruction_count(request)];
    hasher.update(&serde_json::to_vec(instructions).unwrap_or_default());
    hasher.update(&serde_json::to_vec(&request.tools).unwrap_or_default());
    hasher.finalize().to_hex().to_string()
}

/// The upstream request: the instructions, then the pass's conversation as items. Calls of
/// the request's `custom` tools go back out as custom tool calls, and every call and output
/// keeps the fields the client sent on it ([`keep_client_fields`]). The client's items come
/// back too, instructions first, for the session's next request to reuse
/// ([`crate::responses_incremental`]).
pub fn render(
    mut request: ResponsesRequest,
    outcome: &PassOutcome,
) -> (ResponsesRequest, Vec<Item>) {
    let keep = instruction_count(&request);
    let mut kept: Vec<Item> = match request.input.take() {
        Some(Input::Items(items)) => items,
        Some(Input::Text(_)) | None => Vec::new(),
    };
    let client_tail = kept.split_off(keep.min(kept.len()));
    let tools = request.tools.as_deref().unwrap_or(&[]);
    let is_custom = |name: &str| {
        tools
            .iter()
            .any(|tool| tool.is_custom() && tool.name() == Some(name))
    };
    let mut rendered =
        responses::from_conversation(outcome.messages.iter().map(|message| &**message), is_custom);
    keep_client_fields(&mut rendered, &client_tail);
    let mut client = kept.clone();
    client.extend(client_tail);
    kept.extend(rendered);
    request.input = Some(Input::Items(kept));
    (request, client)
}

/// Gives each rendered item the fields the client sent on it (`id`, `status`, `annotations`,
/// harness fields such as Codex's `internal_chat_message_metadata_passthrough`), in the
/// client's key order: the neutral model keeps none of them, and the codecs promise that
/// what the engine did not change goes up as the client sent it. A call or output is found
/// by its call id. The rendered messages after the head are the client's last ones in order,
/// so a message is paired with the client's message as far from the end, and takes its
/// fields when the two have the same role and texts (less the tag the engine put at their
/// start): a message the engine changed (dropped, an excerpt) keeps none, and the pairing of
/// the others never depends on which changed, so their bytes stay the same from pass to
/// pass. The engine's own values (a tag, a dropped output, a clipped input) still win.
fn keep_client_fields(rendered: &mut [Item], client: &[Item]) {
    let mut by_call: HashMap<(&str, &str), &Item> = HashMap::new();
    for item in client {
        if let Some(call_id) = item.call_id() {
            by_call.entry((item.type_name(), call_id)).or_insert(item);
        }
    }
    let messages: Vec<(&Item, &MessageItem)> = client
        .iter()
        .filter_map(|item| match item {
            Item::Message(message) => Some((item, message)),
            _ => None,
        })
        .collect();
    let mut paired = messages.iter().rev();
    for item in rendered.iter_mut().rev() {
        let theirs = match &*item {
            Item::Message(ours) => paired
                .next()
                .filter(|(_, theirs)| {
                    theirs.role == ours.role
                        && untagged_texts(&theirs.content) == untagged_texts(&ours.content)
                })
                .map(|(item, _)| *item),
            other => other
                .call_id()
                .and_then(|call_id| by_call.get(&(other.type_name(), call_id)).copied()),
        };
        if let Some(theirs) = theirs {
            item.adopt_client_fields(theirs);
        }
    }
}

/// A message's texts, each without the tag the engine puts at its start (`§12§ `).
fn untagged_texts(content: &Content) -> Vec<&str> {
    match content {
        Content::Text(text) => vec![untagged(text)],
        Content::Parts(parts) => parts
            .iter()
            .filter_map(|part| match part {
                ContentPart::Text(part) => Some(untagged(&part.text)),
                ContentPart::Refusal(_) | ContentPart::Other(_) => None,
            })
            .collect(),
    }
}
