//! Side calls: a host's one-shot requests beside its conversation (a title, a compaction
//! summary), recognised so they go upstream untouched.
//!
//! Managed like a conversation, such a call would get a session of its own, the m[0]/m[1]
//! head and tags: a title generator would be shown our history block and title it. So a
//! recognised side call is forwarded byte for byte. Its ledger row has no session and no
//! pass (the ledger's pass kinds are the engine's own, so the log line names the side call).
//!
//! The recognition is narrow on purpose, because a false positive would leave a real
//! conversation unmanaged. A side call offers **no tools** (absent or empty) and is either
//! marked as one by its host, or opens with one of the fixed instructions below and has
//! the small, fixed shape that host gives it (as `shared/CLIENTS.md` records them):
//!
//! | host | instruction opens with | messages |
//! | --- | --- | --- |
//! | OpenCode title | system `You are a title generator` | 1–2 user messages, the first `Generate a title for this conversation:` |
//! | OpenCode compaction | system `You are a context summarization agent` | one user message holding `<conversation>` |
//! | Pi compaction | system `You are a context summarization assistant` | one user message holding `<conversation>` … `</conversation>` |
//! | Codex compaction | header `x-codex-turn-metadata` with `"request_kind":"compaction"` | any (it carries the history) |
//!
//! Claude Code's own title and summary calls are not matched here: they share its session
//! id and are kept apart by the session lanes ([`crate::session_resolve`]).

use axum::http::HeaderMap;
use mc_core::{Message, Role};
use serde_json::Value;

use crate::client_request::ClientRequest;
use crate::headers::header_str;

/// The header in which Codex describes each request, `request_kind` among it.
const CODEX_TURN_METADATA: &str = "x-codex-turn-metadata";

/// Most messages an OpenCode title call has: the instruction and the prompt, which some
/// wires carry as two user messages and Anthropic merges into one.
const TITLE_MAX_MESSAGES: usize = 2;

/// The ledger route of a [`SideCall::StatefulResponses`] call, so `status` can say how many
/// calls went up unmanaged because their history lives at the provider.
pub const STATEFUL_RESPONSES_ROUTE: &str = "openai_responses_stateful";

/// A recognised side call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SideCall {
    /// OpenCode's first-turn title generation.
    OpenCodeTitle,
    /// OpenCode's summary of the conversation when it compacts.
    OpenCodeCompaction,
    /// Pi's summary of the conversation when it compacts.
    PiCompaction,
    /// Codex's compaction request.
    CodexCompaction,
    /// A Responses call that leans on history stored at the provider
    /// (`previous_response_id`, a `conversation`, `item_reference` items) or carries no
    /// `input`: not the whole conversation, so there is nothing to rewrite.
    StatefulResponses,
}

impl SideCall {
    /// Its name in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenCodeTitle => "opencode_title",
            Self::OpenCodeCompaction => "opencode_compaction",
            Self::PiCompaction => "pi_compaction",
            Self::CodexCompaction => "codex_compaction",
            Self::StatefulResponses => "responses_stateful",
        }
    }
}

/// The side call a request is, if it is one (the rules are in the module docs).
pub fn recognise(
    headers: &HeaderMap,
    request: &ClientRequest,
    conversation: &[Message],
) -> Option<SideCall> {
    if request.has_tools() {
        return None;
    }
    if is_codex_compaction(headers) {
        return Some(SideCall::CodexCompaction);
    }
    let opens = |opening: &str| {
        request
            .system_texts()
            .iter()
            .any(|text| text.trim_start().starts_with(opening))
    };
    let only_users = |max: usize| {
        !conversation.is_empty()
            && conversation.len() <= max
            && conversation
                .iter()
                .all(|message| message.role == Role::User)
    };
    let first_text = conversation
        .first()
        .and_then(|message| message.texts().next())
        .unwrap_or("");
    let holds = |needle: &str| {
        conversation
            .iter()
            .flat_map(Message::texts)
            .any(|text| text.contains(needle))
    };
    if opens("You are a title generator")
        && only_users(TITLE_MAX_MESSAGES)
        && first_text.starts_with("Generate a title for this conversation:")
    {
        return Some(SideCall::OpenCodeTitle);
    }
    if opens("You are a context summarization agent") && only_users(1) && holds("<conversation>") {
        return Some(SideCall::OpenCodeCompaction);
    }
    if opens("You are a context summarization assistant")
        && only_users(1)
        && holds("<conversation>")
        && holds("</conversation>")
    {
        return Some(SideCall::PiCompaction);
    }
    None
}

/// Whether Codex's turn metadata marks the request as a compaction.
fn is_codex_compaction(headers: &HeaderMap) -> bool {
    header_str(headers, CODEX_TURN_METADATA)
        .and_then(|metadata| serde_json::from_str::<Value>(metadata).ok())
        .is_some_and(|metadata| {
            metadata.get("request_kind").and_then(Value::as_str) == Some("compaction")
        })
}

#[cfg(test)]
#[path = "side_call_tests.rs"]
mod tests;
