//! What a call's pass produced for its upstream call: the body to send and the facts the
//! ledger, the historian and acceptance read about it.

use mc_core::{ProjectId, SessionId, SessionMode};

use crate::chunked_body::ChunkedBody;
use crate::side_call::SideCall;

/// What the pass produced for the upstream call.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The session the call belongs to (`None` for a busy-store replay, which resolves
    /// nothing).
    pub session: Option<SessionId>,
    /// The session's project, when known (the dreamer borrows the call's credentials for it).
    pub project: Option<ProjectId>,
    /// The model the call names.
    pub model: String,
    /// The pass, when one ran (not for a busy-store replay).
    pub pass: Option<PassFacts>,
    /// The usable window the pass planned against.
    pub usable_window: Option<u64>,
    /// The context window the pass planned against, when known.
    pub window_tokens: Option<u64>,
    /// The upstream request body.
    pub upstream_body: ChunkedBody,
    /// Remove the usage chunk the proxy asked for from the client's stream.
    pub hide_usage_chunk: bool,
    /// The host's side call this is, forwarded as sent (then no session and no pass).
    pub side_call: Option<SideCall>,
}

impl Planned {
    /// A call forwarded as the client sent it (a host's side call, a stateful Responses
    /// call): no session, no pass.
    pub(crate) fn as_sent(model: String, body: &ChunkedBody, side_call: SideCall) -> Self {
        Self {
            session: None,
            project: None,
            model,
            pass: None,
            usable_window: None,
            window_tokens: None,
            upstream_body: body.clone(),
            hide_usage_chunk: false,
            side_call: Some(side_call),
        }
    }
}

/// The ledger's view of a pass.
#[derive(Debug, Clone)]
pub struct PassFacts {
    /// The pass's number within the session.
    pub seq: u64,
    /// `cache_hit`, `soft_bust` or `hard_fold`.
    pub kind: String,
    /// Why it busted.
    pub cause: Option<String>,
    /// The estimated size of the prompt it rendered, in the provider's tokens.
    pub estimated_prompt_tokens: u64,
    /// How many messages of the session the call carries (the client's conversation): what
    /// a provider accepts when it answers with a success.
    pub messages: u64,
    /// The estimated size of the system prompt and tools, which every rendering carries: a
    /// window claimed smaller than this cannot be true.
    pub fixed_tokens: u64,
    /// How the session was managed: the historian runs for a primary session only.
    pub mode: SessionMode,
    /// The client's own prompt, before the pass reduced it, in the provider's tokens as
    /// estimated: what the host would have sent on its own.
    pub client_prompt_tokens: u64,
    /// The system prompt and tools within it, estimated alike.
    pub client_fixed_tokens: u64,
}
