//! What a Responses request's instructions and conversation are, and when a rendered item
//! stands for a client's (the upstream body is written by [`crate::encoded_responses`]).
//!
//! Like Chat, a Responses request carries its instructions up front: the `instructions`
//! field and the leading `system` / `developer` message items (Codex sends its base
//! instructions and permissions as two developer items, OpenCode and Pi a system item).
//! Those are the prompt's fixed prefix: they go up verbatim and identify the prefix, and
//! the engine manages only the items after them. OpenAI caches prefixes on its own (routed
//! by `prompt_cache_key`, which goes up as the client sent it), so there are no breakpoints
//! to place.

use mc_core::tags::untagged;
use mc_core::{Message, Part, Role};
use mc_wire::responses::{self, Content, ContentPart, Input, Item, MessageItem, ResponsesRequest};

/// The request's items; a bare string input is one user message.
fn items(request: &ResponsesRequest) -> &[Item] {
    match &request.input {
        Some(Input::Items(items)) => items,
        Some(Input::Text(_)) | None => &[],
    }
}

/// The conversation after the instructions, in the neutral model.
pub fn conversation(request: &ResponsesRequest) -> Vec<Message> {
    match &request.input {
        Some(Input::Text(text)) => vec![Message::new(Role::User, vec![Part::text(text.clone())])],
        Some(Input::Items(items)) => {
            responses::to_conversation(&items[request.instruction_count()..])
        }
        None => Vec::new(),
    }
}

/// A stable identity of the instructions and tools.
pub fn prefix_identity(request: &ResponsesRequest) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(request.instructions().unwrap_or("").as_bytes());
    hasher.update(b"\0");
    let instructions = &items(request)[..request.instruction_count()];
    hasher.update(&serde_json::to_vec(instructions).unwrap_or_default());
    hasher.update(&serde_json::to_vec(&request.tools).unwrap_or_default());
    hasher.finalize().to_hex().to_string()
}

/// Whether a rendered message item says what the client's did: the same role and texts
/// (less the tag the engine put at their start). Such an item takes the fields the client
/// sent on it (`id`, `status`, `annotations`, harness fields such as Codex's
/// `internal_chat_message_metadata_passthrough`), in the client's key order, as a call or an
/// output takes those of the client's item with its call id: the neutral model keeps none of
/// them, and what the engine did not change goes up as the client sent it. A message item is
/// paired with the client's message item as far from the end ([`crate::encoded_responses`]):
/// one the engine changed (dropped, an excerpt) keeps no field, and the pairing of the others
/// never depends on which changed, so their bytes stay the same from pass to pass. The
/// engine's own values (a tag, a dropped output, a clipped input) still win.
pub fn says_the_same(ours: &MessageItem, theirs: &MessageItem) -> bool {
    theirs.role == ours.role && untagged_texts(&theirs.content) == untagged_texts(&ours.content)
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
