//! The upstream Chat Completions request for a pass.
//!
//! Chat requests carry their instructions as leading `system` / `developer` messages. Those
//! are the prompt's fixed prefix, not conversation: they go up verbatim and identify the
//! prefix, and the engine manages only what follows. OpenAI caches prefixes on its own, so
//! there are no breakpoints to place.

use mc_core::Message;
use mc_core::tags::untagged;
use mc_engine::PassOutcome;
use mc_wire::WireError;
use mc_wire::openai::{self, ChatContent, ChatMessage, ChatRequest, ChatRole, ContentPart};

/// How many leading messages are instructions.
pub fn instruction_count(request: &ChatRequest) -> usize {
    request
        .messages
        .iter()
        .take_while(|message| is_instruction(message))
        .count()
}

/// Whether a message is written as an instruction (a `system` or `developer` message).
pub fn is_instruction(message: &ChatMessage) -> bool {
    matches!(message.role, ChatRole::System | ChatRole::Developer)
}

/// The conversation after the instructions, in the neutral model.
pub fn conversation(request: &ChatRequest) -> Result<Vec<Message>, WireError> {
    request.messages[instruction_count(request)..]
        .iter()
        .map(openai::to_message)
        .collect()
}

/// A stable identity of the instructions and tools.
pub fn prefix_identity(request: &ChatRequest) -> String {
    let mut hasher = blake3::Hasher::new();
    let instructions = &request.messages[..instruction_count(request)];
    hasher.update(&serde_json::to_vec(instructions).unwrap_or_default());
    hasher.update(&serde_json::to_vec(&request.tools).unwrap_or_default());
    hasher.finalize().to_hex().to_string()
}

/// The upstream request: the instructions, then the pass's conversation; and whether it
/// now asks for the stream's usage chunk where the client did not (OpenAI streams report
/// no usage otherwise, and the engine plans on reported usage). The client's messages come
/// back too, for the session's next request to reuse ([`crate::chat_incremental`]).
pub fn render(
    mut request: ChatRequest,
    outcome: &PassOutcome,
) -> (ChatRequest, bool, Vec<ChatMessage>) {
    let keep = instruction_count(&request);
    let client = request.messages.split_off(keep);
    request.messages.extend(
        outcome
            .messages
            .iter()
            .flat_map(|message| openai::from_message(message)),
    );
    keep_client_fields(&mut request.messages[keep..], &client);
    let added_usage = request.is_stream() && !request.includes_stream_usage();
    if added_usage {
        request.set_stream_usage(true);
    }
    let mut messages = request.messages[..keep].to_vec();
    messages.extend(client);
    (request, added_usage, messages)
}

/// Gives each rendered message the fields the client sent on it (`name`, `refusal`,
/// `annotations`, its reasoning key, its content's form, its parts' and calls' fields), in
/// the client's key order: the neutral model keeps none of them, and what the engine did not
/// change goes up as the client sent it. The rendered messages after the head are the
/// client's last ones in order, so a message is paired with the client's message as far from
/// the end, and takes its fields when the two have the same role, texts (less the engine's
/// tag) and calls: a message the engine changed keeps none, and the pairing of the others
/// never depends on which changed, so their bytes stay the same from pass to pass.
fn keep_client_fields(rendered: &mut [ChatMessage], client: &[ChatMessage]) {
    for (ours, theirs) in rendered.iter_mut().rev().zip(client.iter().rev()) {
        if same_message(ours, theirs) {
            ours.adopt_client_fields(theirs);
        }
    }
}

/// Whether a rendered message says what the client's did: role, untagged texts, the call it
/// answers and the calls it makes.
fn same_message(ours: &ChatMessage, theirs: &ChatMessage) -> bool {
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
