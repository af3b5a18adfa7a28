//! What a pass changes in a client's Anthropic request outside its messages ([`HeadEdits`]),
//! applied by one function, so the rendering and the kept encodings of a head
//! ([`crate::encoded_head`]) apply the same edits.

use mc_core::breakpoints::Ttl;
use mc_wire::anthropic::{BlockContent, ContentBlock, MessagesRequest};
use serde_json::{Value, json};

/// `context_management` edits that clear tool results server-side: they would rewrite the
/// prompt behind the engine's back and break the cached prefix it keeps stable.
const SERVER_CLEARING_PREFIX: &str = "clear_tool_uses";

/// What a pass changes in the request outside its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadEdits {
    /// A cache marker on the last system block, with its TTL.
    pub system_marker: Option<Ttl>,
    /// `max_tokens` lowered to fit the window.
    pub max_tokens: Option<u64>,
}

/// Applies a pass's edits to a client request outside its messages: the client's markers
/// and server-side clearing removed, the plan's system marker placed, `max_tokens` lowered.
pub fn edit_head(request: &mut MessagesRequest, edits: HeadEdits) {
    request.messages.clear();
    mc_wire::anthropic::strip_client_markers(request);
    drop_server_clearing(request);
    if let Some(ttl) = edits.system_marker {
        if let Some(BlockContent::Text(text)) = &request.system {
            request.system = Some(BlockContent::Blocks(vec![ContentBlock::text(text.clone())]));
        }
        request.mark_last_system_block(marker(ttl));
    }
    if let Some(max_tokens) = edits.max_tokens {
        request
            .rest
            .insert("max_tokens".to_owned(), Value::from(max_tokens));
    }
}

fn drop_server_clearing(request: &mut MessagesRequest) {
    let Some(Value::Object(management)) = request.rest.get_mut("context_management") else {
        return;
    };
    if let Some(Value::Array(edits)) = management.get_mut("edits") {
        edits.retain(|edit| {
            !edit
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|kind| kind.starts_with(SERVER_CLEARING_PREFIX))
        });
        if edits.is_empty() {
            request.rest.remove("context_management");
        }
    }
}

/// The cache marker of a breakpoint with this TTL.
pub fn marker(ttl: Ttl) -> Value {
    match ttl {
        Ttl::OneHour => json!({"type": "ephemeral", "ttl": "1h"}),
        Ttl::FiveMinutes => json!({"type": "ephemeral"}),
    }
}
