//! What a pass is asked (the client's request as the engine sees it) and what it answers
//! (the upstream conversation and why), apart from the pass that connects them.

use std::sync::Arc;

use mc_core::breakpoints::{BreakpointPlan, CacheTtlChoice};
use mc_core::head::ProjectDoc;
use mc_core::pass_plan::PassPlan;
use mc_core::tags::TagNo;
use mc_core::{HashChain, Host, Message, ProjectId, SessionId, SessionMode};

/// Counts the tokens of a text, as the provider would (an estimate).
pub type CountText<'a> = &'a dyn Fn(&str) -> u64;

/// What one client request asks of the engine.
pub struct PassRequest<'a> {
    /// The session it belongs to.
    pub session: &'a SessionId,
    /// The client program.
    pub host: Host,
    /// How the session is treated (DESIGN's session modes): a subagent gets no compartment
    /// history, a session with compaction off keeps its messages as the client sent them.
    pub mode: SessionMode,
    /// The primary session a subagent works for, when the caller knows it.
    pub spawned_by: Option<&'a SessionId>,
    /// The session of the conversation this one continues, when it opens with the client's
    /// summary of it ([`mc_core::continues_compacted`]): the session's first render carries
    /// what that one held into `m[0]`.
    pub continues: Option<&'a SessionId>,
    /// The project the session works in, when the caller resolved one (a session keeps the
    /// first project it is given).
    pub project: Option<&'a ProjectId>,
    /// The model the request names.
    pub model: &'a str,
    /// Identity of the system prompt and tools (any stable string, e.g. a hash): a change
    /// kills the provider cache.
    pub prefix_identity: &'a str,
    /// Number of system blocks the upstream request carries (for breakpoint placement).
    pub system_blocks: usize,
    /// The client's whole conversation, as it sent it.
    pub messages: &'a [Message],
    /// The hash chain of `messages`, when the caller already computed it (the proxy does,
    /// to resolve the session); saves hashing the whole conversation a second time.
    pub chain: Option<&'a HashChain>,
    /// When the request arrived.
    pub now_ms: u64,
    /// The usable window (window minus output reserve), when known.
    pub usable_window: Option<u64>,
    /// Estimated tokens of what the request carries besides its messages: the system prompt
    /// and tools (same estimator as `count_text`). Part of every prompt the provider counts,
    /// so the window fit and the learned token correction need it.
    pub fixed_tokens: u64,
    /// Input + cache read + cache write of the previous response, when the caller knows it
    /// (else the engine uses what it recorded).
    pub last_usage_tokens: Option<u64>,
    /// The pass whose upstream call `last_usage_tokens` counted (the ledger knows it), `None`
    /// when unknown. Pairs the report with that pass's estimate to learn the model's token
    /// correction; an unpaired report is still planned with, but not learned from.
    pub last_usage_pass: Option<u64>,
    /// The operator asked queued work to land now.
    pub operator_flush: bool,
    /// The project's docs as read from its folder now (ARCHITECTURE.md, …); `m[0]` takes
    /// them in at its next hard fold, within the docs budget.
    pub project_docs: &'a [ProjectDoc],
    /// The model can call `ctx_reduce` (the proxy adds it, or the client's tool list has
    /// it from our MCP server): a reminder about old output then names the tool and the tags.
    pub reduce_tool: bool,
    /// The client's cache TTL choice (`"1h"` anywhere keeps 1 hour).
    pub client_ttl: CacheTtlChoice,
    /// Token estimates.
    pub count_text: CountText<'a>,
}

/// The upstream conversation a pass produced, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct PassOutcome {
    /// The pass's number within the session.
    pub seq: u64,
    /// The plan that governed it.
    pub plan: PassPlan,
    /// `m[0]`, `m[1]`, then the tagged tail with every landed drop replayed. Shared: a
    /// message rendered exactly as on the session's previous pass is the same allocation
    /// that pass returned, so a caller can reuse what it derived from it.
    pub messages: Vec<Arc<Message>>,
    /// Where the cache markers go.
    pub breakpoints: BreakpointPlan,
    /// Drops that landed on this pass.
    pub landed: Vec<TagNo>,
    /// Estimated tokens those drops removed.
    pub tokens_removed: u64,
    /// The estimated size of the whole upstream prompt (system, tools and messages), in the
    /// provider's tokens as the learned correction predicts them.
    pub estimated_prompt_tokens: u64,
    /// The prompt the client sent (system, tools and every message, before any reduction),
    /// estimated like [`Self::estimated_prompt_tokens`]: what the host would have sent on
    /// its own, which the ledger keeps so the host's own compaction can be priced beside
    /// what the session cost.
    pub client_prompt_tokens: u64,
    /// The system prompt and tools within [`Self::client_prompt_tokens`], estimated alike.
    pub client_fixed_tokens: u64,
}
