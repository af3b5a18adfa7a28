//! What a client's Anthropic request says about the provider's cache: the TTL its markers
//! chose, and the identity of the prefix (system prompt and tools) a change of which kills
//! the cached prefix.

use mc_core::breakpoints::CacheTtlChoice;
use serde_json::Value;

use super::{BlockContent, Message, MessagesRequest};

/// The client's TTL choice, read from every marker it sent.
pub fn client_ttl(request: &MessagesRequest) -> CacheTtlChoice {
    let system = match &request.system {
        Some(BlockContent::Blocks(blocks)) => blocks.as_slice(),
        _ => &[],
    };
    let one_hour = system
        .iter()
        .any(|block| is_one_hour(block.cache_control()))
        || request
            .tools
            .iter()
            .flatten()
            .any(|tool| is_one_hour(tool.rest.get("cache_control")))
        || request.messages.iter().any(uses_one_hour);
    if one_hour {
        CacheTtlChoice::OneHour
    } else {
        CacheTtlChoice::Default
    }
}

/// Whether a message carries a client marker with the 1-hour TTL.
pub fn uses_one_hour(message: &Message) -> bool {
    match &message.content {
        BlockContent::Blocks(blocks) => blocks
            .iter()
            .any(|block| is_one_hour(block.cache_control())),
        BlockContent::Text(_) => false,
    }
}

fn is_one_hour(marker: Option<&Value>) -> bool {
    marker
        .and_then(|marker| marker.get("ttl"))
        .and_then(Value::as_str)
        == Some("1h")
}

/// Removes the client's `cache_control` markers from the system prompt and tools (the
/// messages are replaced by the engine's anyway); the breakpoint plan places its own.
pub fn strip_client_markers(request: &mut MessagesRequest) {
    if let Some(BlockContent::Blocks(blocks)) = &mut request.system {
        blocks
            .iter_mut()
            .for_each(|block| block.set_cache_control(None));
    }
    for tool in request.tools.iter_mut().flatten() {
        tool.rest.remove("cache_control");
    }
}

/// A stable identity of the system prompt and tools: a change of either kills the
/// provider's cache. Blind to cache markers (Claude Code moves them between turns), because
/// it is taken after [`strip_client_markers`], which also spares copying the prompt.
pub fn prefix_identity(request: &MessagesRequest) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&serde_json::to_vec(&request.system).unwrap_or_default());
    for tool in request.tools.iter().flatten() {
        hasher.update(tool.name.as_bytes());
        hasher.update(&serde_json::to_vec(&tool.rest).unwrap_or_default());
    }
    hasher.finalize().to_hex().to_string()
}
