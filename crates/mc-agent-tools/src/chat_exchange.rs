//! What a Chat Completions request gets from the proxy's tools, and what it keeps of them:
//! the guidance message and our tool definitions added to it, and the shape of a stored
//! exchange ([`ChatSplice`]). Shared by the whole preparation ([`super::chat`]) and the
//! walked one ([`crate::chat_walks`]), which must write the same bytes.

use mc_engine::tools::Offer;
use mc_wire::openai::{ChatMessage, ChatRequest, ChatRole, ChatTool};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The wire's name in anchors: a Chat splice is never read as an Anthropic one.
pub const WIRE: &str = "openai-chat";

/// One stored exchange of a Chat conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatSplice {
    /// The rounds the client never saw: each answer that called only our tools, then one
    /// `tool` message per call.
    pub before: Vec<ChatMessage>,
    /// The answer as the model gave it, when the client got it otherwise (without our
    /// calls, or after the text of the hidden rounds, which a live stream showed).
    pub full_answer: Option<ChatMessage>,
    /// The key of the answer as the client got it ([`super::answer_key`]); a content hash
    /// (hex) in exchanges stored before keys.
    pub client_answer: String,
    /// The `tool` messages answering our calls in the answer.
    pub results: Vec<ChatMessage>,
}

/// `offer`'s guidance, as the leading `system` message after the client's instructions.
pub fn guidance_message(offer: Offer) -> ChatMessage {
    ChatMessage::text(ChatRole::System, offer.guidance)
}

/// Appends the tools `offer` names to the client's.
pub fn add_chat_tools(request: &mut ChatRequest, offer: Offer) {
    let tools = request.tools.get_or_insert_with(Vec::new);
    for spec in offer.specs {
        let definition = json!({"type": "function", "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": Value::Object(spec.input_schema.clone()),
        }});
        if let Value::Object(raw) = definition {
            tools.push(ChatTool {
                raw: std::sync::Arc::new(raw),
            });
        }
    }
}
