//! Ids for everything the simulator hands out: messages, completions, tool calls, requests.
//!
//! Clients key on these ids (Claude Code merges assistant messages that share a message id,
//! and tool results name their call), so each must be unique not only within one server but
//! across restarts too: a client may resume a session against a new simulator process. Every
//! id therefore joins a per-process tag (the start time in nanoseconds) to a process-wide
//! counter.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The process's tag: the low 48 bits of the first use's time in nanoseconds, in hex.
fn process_tag() -> &'static str {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        format!("{:012x}", nanos & 0xffff_ffff_ffff)
    })
}

/// The next number of the process-wide counter, starting at 1.
fn next_serial() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn make(prefix: &str) -> String {
    format!("{prefix}{}{:06}", process_tag(), next_serial())
}

/// An Anthropic message id, `msg_sim_…`.
pub(crate) fn message_id() -> String {
    make("msg_sim_")
}

/// An OpenAI completion id, `chatcmpl-sim-…`.
pub(crate) fn completion_id() -> String {
    make("chatcmpl-sim-")
}

/// An Anthropic tool-use id, `toolu_sim_…`.
pub(crate) fn tool_use_id() -> String {
    make("toolu_sim_")
}

/// An OpenAI tool-call id, `call_sim_…`.
pub(crate) fn tool_call_id() -> String {
    make("call_sim_")
}

/// A Responses response id, `resp_sim_…`.
pub(crate) fn response_id() -> String {
    make("resp_sim_")
}

/// A Responses output item id: `msg_sim_…` for a message, `fc_sim_…` for a function call.
pub(crate) fn output_item_id(prefix: &str) -> String {
    make(prefix)
}

/// A request id for the `request-id` header, `req_sim_…`.
pub(crate) fn request_id() -> String {
    make("req_sim_")
}

/// A stand-in thinking signature for scripted thinking that gave none.
pub(crate) fn signature() -> String {
    make("sim_signature_")
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn ids_are_unique_and_prefixed() {
        let ids: HashSet<String> = (0..1000).map(|_| message_id()).collect();
        assert_eq!(ids.len(), 1000);
        assert!(ids.iter().all(|id| id.starts_with("msg_sim_")));
        assert!(completion_id().starts_with("chatcmpl-sim-"));
        assert!(tool_use_id().starts_with("toolu_sim_"));
    }
}
