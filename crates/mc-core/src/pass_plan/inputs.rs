//! What the pass planner knows about a session when a request arrives.
//!
//! Everything is passed in: the clock (`now_ms`), the provider's last usage report, the
//! proven window and the state of the head and the queues. The planner reads nothing else, so
//! the same inputs always give the same plan (DESIGN §5).

use serde::{Deserialize, Serialize};

use crate::config::{CacheTtl, Tokens};

/// The session's state as the pass planner sees it.
///
/// `Default` is a session that has never been rendered (`head_rendered = false`) with no
/// previous call: its first pass is a hard fold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassInputs {
    /// The time of this request, in Unix milliseconds (the engine's clock, passed in).
    pub now_ms: u64,
    /// When the previous upstream call of this session was sent, in Unix milliseconds;
    /// `None` when there was none, so nothing of this session is cached.
    pub last_call_ms: Option<u64>,
    /// Input + cache read + cache write tokens of the last response (DESIGN §9 usage).
    pub last_usage_tokens: Tokens,
    /// The context window minus the output reserve; `None` when the window is unknown, in
    /// which case percent thresholds never fire (a token threshold still does).
    pub usable_window: Option<Tokens>,
    /// A limit the provider itself proved (a "prompt is too long" error, or a documented
    /// window confirmed by a response); only a proven limit may justify a refusal.
    pub proven_window: Option<Tokens>,
    /// How long the provider keeps the cached prefix after its last hit, for this model.
    /// It also sets the write price of a bust (1.25x for 5 minutes, 2x for 1 hour).
    pub ttl: CacheTtl,
    /// The request names a different model than the previous call: the cache is gone.
    pub model_changed: bool,
    /// The system prompt (or tools) changed since the previous call: the cache is gone.
    pub system_changed: bool,
    /// The operator asked for queued work to land now (`magic-context flush`).
    pub operator_flush: bool,
    /// `m[0]` has been rendered before; `false` on the first render of the session.
    pub head_rendered: bool,
    /// `m[0]`'s own content changed (structural history edits, compartments that must be
    /// folded into it): the next bust has to re-materialise it.
    pub head_dirty: bool,
    /// Tokens of the current `m[0]`.
    pub m0_tokens: Tokens,
    /// Tokens of the current `m[1]` (the placeholder when there is no delta).
    pub m1_tokens: Tokens,
    /// Memory updates (changed, superseded, removed) listed in `m[1]`.
    pub m1_memory_updates: u32,
    /// Work that waits for a pass allowed to change bytes.
    pub pending: PendingWork,
    /// The engine's estimate of the prompt this request carries before any mutation, new
    /// tail included. It raises usage when a single turn grew the prompt past a threshold the
    /// last response did not reach yet, and its excess over `last_usage_tokens` is the growth
    /// per turn the economics project forward.
    pub prompt_tokens_estimate: Tokens,
    /// Estimated tokens of what the request carries besides its messages (system prompt and
    /// tools), in the provider's tokens; part of `prompt_tokens_estimate`.
    pub fixed_tokens: Tokens,
    /// The prompt estimate with every way of shrinking it applied (the minimal rendering:
    /// system, tools, head, task and excerpts of everything), in the provider's tokens; `0`
    /// when not computed. Over the limit, the request is refused.
    pub minimal_prompt_tokens: Tokens,
    /// Cached tokens a soft bust rewrites: from `m[1]` to the last cached block. A hard fold
    /// rewrites `m[0]` too (`m0_tokens` more).
    pub prefix_tokens_estimate: Tokens,
    /// The cache-hit passes since the session's last bust, and what they could have removed.
    #[serde(default)]
    pub cycle: BustCycle,
}

/// The passes since a session's last bust, as the working-set weighing needs them: a bust now
/// ends a cycle whose reads of removable tokens were already paid.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BustCycle {
    /// Cache-hit passes since the last bust.
    pub passes: u64,
    /// The sum, over those passes, of the tokens a bust would have removed on each (R), in
    /// the provider's tokens: what the cycle so far read that a bust could have spared.
    pub removable_sum: Tokens,
}

impl BustCycle {
    /// The cycle after a cache-hit pass that could have removed `removable` tokens.
    pub fn after_hit(self, removable: Tokens) -> Self {
        Self {
            passes: self.passes.saturating_add(1),
            removable_sum: Tokens(self.removable_sum.get().saturating_add(removable.get())),
        }
    }
}

/// Work queued for the next pass that may change bytes; it never causes its own bust.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingWork {
    /// Tokens removed by queued drops that may land now (protected tags excluded).
    pub queued_drop_tokens: Tokens,
    /// Tokens the automatic reclaim lanes would remove on this pass (raw history covered by
    /// new compartments included). The engine runs them in emergency mode when
    /// [`crate::pass_plan::measure_usage`] reports the force band.
    pub reclaimable_tokens: Tokens,
    /// `m[1]` would render differently (new compartments, memories, memory updates).
    pub m1_changed: bool,
}

impl PendingWork {
    /// R: the tokens this pass would remove from every later request if it busts.
    pub fn removable_tokens(&self) -> Tokens {
        Tokens(
            self.queued_drop_tokens
                .get()
                .saturating_add(self.reclaimable_tokens.get()),
        )
    }

    /// Whether a bust would land anything at all.
    pub fn has_work(&self) -> bool {
        self.removable_tokens().get() > 0 || self.m1_changed
    }
}
