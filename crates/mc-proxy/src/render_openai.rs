//! The upstream Chat Completions request for a pass.
//!
//! Chat requests carry their instructions as leading `system` / `developer` messages. Those
//! are the prompt's fixed prefix, not conversation: they go up verbatim and identify the
//! prefix, and the engine manages only what follows. OpenAI caches prefixes on its own, so
//! there are no breakpoints to place.

use mc_core::Message;
use mc_engine::PassOutcome;
use mc_wire::WireError;
use mc_wire::openai::{self, ChatRequest, ChatRole};

/// How many leading messages are instructions.
pub fn instruction_count(request: &ChatRequest) -> usize {
    request
        .messages
        .iter()
        .take_while(|message| matches!(message.role, ChatRole::System | ChatRole::Developer))
        .count()
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
/// no usage otherwise, and the engine plans on reported usage).
pub fn render(mut request: ChatRequest, outcome: &PassOutcome) -> (ChatRequest, bool) {
    let keep = instruction_count(&request);
    request.messages.truncate(keep);
    request.messages.extend(
        outcome
            .messages
            .iter()
            .flat_map(|message| openai::from_message(message)),
    );
    let added_usage = request.is_stream() && !request.includes_stream_usage();
    if added_usage {
        request.set_stream_usage(true);
    }
    (request, added_usage)
}
