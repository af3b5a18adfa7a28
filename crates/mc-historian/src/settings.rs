//! The historian's knobs for one session, resolved from the configuration and the session's
//! usable window.

use mc_core::config::{Config, Tokens};
use mc_store::KnowledgeSource;

/// How large a chunk may grow, as a multiple of the trigger budget: a backlog (the historian
/// was off, or failed for a while) is caught up in a few large runs rather than many small
/// ones, and one run's transcript stays a modest prompt.
///
/// Where turns are large (file reads of several thousand tokens), a few budgets are only a
/// few turns: the cap cut most chunks short of the live tail, and what it left out stayed raw
/// in every request until a later run. Chosen by replay (controlled cost against
/// `autocompact`, mean over the generated long sessions of seeds 1–8 at 200K): 3 budgets
/// 0.815, 4 0.776, 5 0.761, 6 0.746, 8 0.745, 12 0.744; the shared swe trajectories, whose
/// chunks stay under the cap, unchanged (0.885 at 200K, 1.104 at 64K).
const MAX_CHUNK_BUDGETS: u64 = 6;

/// The usable window assumed when a session's is unknown: a 200K-token model less its output
/// reserve, the common case.
pub const ASSUMED_USABLE_WINDOW: u64 = 168_000;

/// What a run needs to know beyond the stored rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistorianSettings {
    /// The unsummarised history (outside the live tail) that triggers a run, in tokens.
    pub trigger_tokens: u64,
    /// The most raw history one run reads, in tokens.
    pub max_chunk_tokens: u64,
    /// The last compartment is left open (published provisionally, or held back from a
    /// rebuild) when it ends within this many ordinals of the chunk.
    pub lookahead: u32,
    /// The newest tags that form the live tail, never summarised.
    pub live_tail_tags: u32,
    /// The most tokens the live tail keeps raw: past it, older messages of the live tail
    /// may be summarised too (the newest two messages always stay raw).
    pub live_tail_max_tokens: u64,
    /// The execute threshold, percent of the usable window: pressure near it lowers the
    /// trigger.
    pub execute_percent: u64,
    /// Usage (percent of the usable window) below which no run starts.
    pub start_usage_percent: u64,
    /// A chunk that reaches the end of what a job may read is taken as closed: its last
    /// compartment is final rather than left open for the lookahead. Off for the
    /// background historian, whose next run reads on; on for [`Self::on_demand`] runs.
    pub closes_range: bool,
    /// Where the project's memories live: the local tables, or a team store's cache (then
    /// published facts are queued for the team store, as the agent's own memory writes are).
    pub knowledge: KnowledgeSource,
}

impl HistorianSettings {
    /// The settings for a session with `usable_window` tokens (an unknown window is taken
    /// as [`ASSUMED_USABLE_WINDOW`]).
    pub fn new(config: &Config, usable_window: Option<u64>) -> Self {
        let usable = Tokens(usable_window.unwrap_or(ASSUMED_USABLE_WINDOW));
        let trigger = config.historian.trigger_budget_tokens(usable).get();
        Self {
            trigger_tokens: trigger,
            max_chunk_tokens: trigger.saturating_mul(MAX_CHUNK_BUDGETS),
            lookahead: config.historian.lookahead_ordinals,
            live_tail_tags: config.historian.live_tail_tags,
            live_tail_max_tokens: config.historian.live_tail_percent.of(usable).get(),
            execute_percent: u64::from(config.pass.execute_threshold_percent.get()),
            start_usage_percent: u64::from(config.historian.start_usage_percent.get()),
            closes_range: false,
            knowledge: KnowledgeSource::Local,
        }
    }

    /// The settings with the project's memories read from, and promoted to, `knowledge`.
    pub fn with_knowledge(self, knowledge: KnowledgeSource) -> Self {
        Self { knowledge, ..self }
    }

    /// The settings of a run the operator asks for now (`wrapup`, `recomp`): no trigger
    /// (any unsummarised history is worth a run), `live_tail_tags` kept raw, and the range
    /// closed at its end. The operator has declared that history finished; holding its
    /// last episode back would leave it raw until the background historian reads past it.
    pub fn on_demand(self, live_tail_tags: u32) -> Self {
        Self {
            trigger_tokens: 0,
            live_tail_tags,
            live_tail_max_tokens: u64::MAX,
            closes_range: true,
            ..self
        }
    }
}
