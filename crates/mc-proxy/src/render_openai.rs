//! What a Chat Completions request's instructions and conversation are, and when a rendered
//! message stands for a client's message (the upstream body is written by
//! [`crate::encoded_chat`]).
//!
//! Chat requests carry their instructions as leading `system` / `developer` messages. Those
//! are the prompt's fixed prefix, not conversation: they go up verbatim and identify the
//! prefix, and the engine manages only what follows. OpenAI caches prefixes on its own, so
//! there are no breakpoints to place.

use mc_core::Message;
use mc_core::tags::untagged;
use mc_wire::WireError;
use mc_wire::openai::{self, ChatContent, ChatMessage, ChatRequest, ContentPart};

/// The conversation after the instructions, in the neutral model.
pub fn conversation(request: &ChatRequest) -> Result<Vec<Message>, WireError> {
    request.messages[request.instruction_count()..]
        .iter()
        .map(openai::to_message)
        .collect()
}

/// A stable identity of the instructions and tools.
pub fn prefix_identity(request: &ChatRequest) -> String {
    let mut hasher = blake3::Hasher::new();
    let instructions = &request.messages[..request.instruction_count()];
    hasher.update(&serde_json::to_vec(instructions).unwrap_or_default());
    hasher.update(&serde_json::to_vec(&request.tools).unwrap_or_default());
    hasher.finalize().to_hex().to_string()
}

/// Whether a rendered message says what the client's did: role, untagged texts, the call it
/// answers and the calls it makes; then it takes the fields the client sent on it (`name`,
/// `refusal`, `annotations`, its reasoning key, its content's form, its parts' and calls'
/// fields, in the client's key order: the neutral model keeps none of them), so what the
/// engine did not change goes up as the client sent it ([`crate::encoded_chat`]). A
/// rendered message is paired with the client's message as far from the end of the list:
/// a message the engine changed keeps no field, and the pairing of the others never
/// depends on which changed, so their bytes stay the same from pass to pass.
pub fn same_message(ours: &ChatMessage, theirs: &ChatMessage) -> bool {
    let call_ids = |message: &ChatMessage| -> Vec<String> {
        message
            .tool_calls
            .iter()
            .flatten()
            .map(|call| call.id.clone())
            .collect()
    };
    ours.role == theirs.role
        && ours.tool_call_id == theirs.tool_call_id
        && call_ids(ours) == call_ids(theirs)
        && texts(ours) == texts(theirs)
}

/// A message's texts, each without the tag the engine puts at its start.
fn texts(message: &ChatMessage) -> Vec<&str> {
    match &message.content {
        None => Vec::new(),
        Some(ChatContent::Text(text)) => vec![untagged(text)],
        Some(ChatContent::Parts(parts)) => parts
            .iter()
            .filter_map(|part| match part {
                ContentPart::Text(part) => Some(untagged(&part.text)),
                _ => None,
            })
            .collect(),
    }
}
