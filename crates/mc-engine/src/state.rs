//! The engine's per-session state, stored as one JSON blob beside the raw log.
//!
//! It holds what the next pass must know and cannot recompute from the raw log: the head as
//! last materialised (so a cache-hit pass re-sends the same bytes), and what the last call
//! reported. Fields are added with serde defaults, so an older blob still reads.

use std::collections::BTreeMap;

use mc_core::SessionId;
use mc_core::pass_plan::BustCycle;
use mc_core::reduction::Reshape;
use mc_store::{ReadTx, WriteTx};
use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};
use crate::nudges::Nudge;

/// How long a proven window binds a session: a day.
pub const PROVEN_WINDOW_TTL_MS: u64 = 24 * 60 * 60 * 1000;

impl EngineState {
    /// Forgets a proven window older than [`PROVEN_WINDOW_TTL_MS`] at `now_ms`; dates one that
    /// has no date yet.
    pub(crate) fn expire_proven_window(&mut self, now_ms: u64) {
        match (self.proven_window, self.proven_window_ms) {
            (Some(_), None) => self.proven_window_ms = Some(now_ms),
            (Some(_), Some(at)) if now_ms.saturating_sub(at) > PROVEN_WINDOW_TTL_MS => {
                self.proven_window = None;
                self.proven_window_ms = None;
            }
            _ => {}
        }
    }
}

/// What the engine remembers between passes of one session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct EngineState {
    /// The model of the last pass; a change kills the provider cache.
    pub model: Option<String>,
    /// Content hash (hex) of the system prompt and tools of the last pass.
    pub prefix_hash: Option<String>,
    /// Whether m[0] has been rendered at least once.
    pub head_rendered: bool,
    /// m[0] as last materialised; re-sent verbatim until the next hard fold.
    pub m0: String,
    /// Estimated tokens of m[0].
    pub m0_tokens: u64,
    /// m[1] as last rendered; re-sent verbatim until the next bust.
    pub m1: String,
    /// Estimated tokens of m[1].
    pub m1_tokens: u64,
    /// Messages below this ordinal are summarised into the head and not sent raw.
    pub boundary: u64,
    /// The boundary `m[0]` was rendered at: compartments before it are in `m[0]`, those
    /// from it to `boundary` in `m[1]`.
    pub m0_boundary: u64,
    /// Where `m[1]`'s compartments start when that is before `m0_boundary`: the history's
    /// provisional compartment at the last fold, which `m[0]` left out so that the run that
    /// replaces it shows in `m[1]` in its place rather than beside a stale copy.
    pub m1_from: Option<u64>,
    /// The project memory log entry `m[0]` was rendered at: later entries show in `m[1]`.
    pub m0_memory_log: u64,
    /// The memories `m[0]` shows.
    pub m0_memory_ids: Vec<u64>,
    /// The memories other projects of the session's workspaces share that `m[0]` shows.
    /// Left out of the stored blob when empty, so a session outside any workspace stores
    /// the same state as before workspaces existed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub m0_shared_memory_ids: Vec<u64>,
    /// The newest memory log entry of those projects when `m[0]` was rendered: an
    /// operator's edit after it of a shared memory `m[0]` shows makes `m[0]` stale.
    #[serde(skip_serializing_if = "is_zero")]
    pub m0_shared_memory_log: u64,
    /// A hash of the project docs `m[0]` shows as rendered (empty when none): an edit to a
    /// doc is told from it, and reaches `m[0]` at the next hard fold, never busting alone.
    pub m0_docs_hash: String,
    /// The profile lines `m[0]` shows; lines added since show in `m[1]`.
    pub m0_profile_ids: Vec<u64>,
    /// When the last upstream call was made.
    pub last_call_ms: Option<u64>,
    /// Input + cache read + cache write of the last response, when reported.
    pub last_usage_tokens: Option<u64>,
    /// The pass whose call `last_usage_tokens` counted, when known.
    pub last_usage_pass: Option<u64>,
    /// The context limit the provider proved with an overflow error.
    pub proven_window: Option<u64>,
    /// When `proven_window` was proven (ms since the epoch): it expires after
    /// [`PROVEN_WINDOW_TTL_MS`], so a limit that was wrong, or that the provider raised, does
    /// not bind the session for good. A limit stored before this was kept counts from the
    /// first pass that reads it.
    pub proven_window_ms: Option<u64>,
    /// The usage report the last landing pass planned with. A later request that reports the
    /// same figure (an identical retry, no new response) reports usage from before the drops
    /// landed, so the plan uses its own estimate instead.
    pub usage_at_landing: Option<u64>,
    /// Old reasoning parts removed from the rendered tail, as (ordinal, part), sorted. Thinking
    /// carries no tag, so these are recorded here and replayed on every later render.
    pub dropped_reasoning: Vec<(u64, u32)>,
    /// The newest ordinal of the last pass that landed a drop: nudges stay quiet for a few
    /// turns after a reduction.
    pub last_reduction_ordinal: Option<u64>,
    /// Every reminder given, oldest first, replayed at its place on every later render.
    pub nudges: Vec<Nudge>,
    /// Units shown smaller (excerpts, clipped tool inputs), replayed on every later render.
    pub reshape: Reshape,
    /// How many tokens each reshaped unit renders to, by "ordinal:part" (counted once).
    pub shown_tokens: BTreeMap<String, u64>,
    /// The estimated prompt (before the learned correction) of the session's latest passes,
    /// as (pass seq, tokens), oldest first: a usage report is compared with the estimate of
    /// the pass it answers to learn the model's token correction.
    pub sent_estimates: Vec<(u64, u64)>,
    /// The pass whose usage report was last learned from, so one report is learned once.
    pub learned_pass: Option<u64>,
    /// The operator asked, between requests, that the next pass bust and land queued work
    /// (`magic-context flush`); cleared by the first pass allowed to change bytes.
    pub flush_requested: bool,
    /// The compartments `m[0]` was rendered from were replaced (`magic-context recomp`), so
    /// `m[0]`'s own content is stale: the next pass allowed to change bytes is a hard fold,
    /// which clears this.
    pub head_rebuild_requested: bool,
    /// How many messages the latest pass rendered: a request of the same length with nothing
    /// new is a repeat (a retry), which must render the same bytes.
    pub last_pass_messages: Option<u64>,
    /// The estimated tokens of the tail the latest pass rendered, counted as rendered, and
    /// the boundary it started at: the next pass's estimate starts from it, exact for every
    /// placeholder, excerpt and skeleton already shown.
    pub rendered_tail: Option<(u64, u64)>,
    /// The cache-hit passes since the last bust and the tokens each could have removed: the
    /// working-set weighing's horizon (see `mc_core::pass_plan::economics`).
    pub bust_cycle: BustCycle,
}

/// How many passes' estimates are kept for learning.
pub const SENT_ESTIMATES_KEPT: usize = 4;

impl EngineState {
    /// Remembers the estimate of pass `seq`.
    pub fn remember_estimate(&mut self, seq: u64, estimate: u64) {
        self.sent_estimates.retain(|&(kept, _)| kept != seq);
        self.sent_estimates.push((seq, estimate));
        let excess = self
            .sent_estimates
            .len()
            .saturating_sub(SENT_ESTIMATES_KEPT);
        self.sent_estimates.drain(..excess);
    }
}

/// Records the usage a provider reported for the call of pass `pass`.
pub(crate) fn record_usage_in(
    tx: &WriteTx<'_>,
    session: &SessionId,
    usage_tokens: u64,
    pass: Option<u64>,
) -> Result<()> {
    let Some(mut state) = load_state(tx, session)? else {
        return Ok(());
    };
    state.last_usage_tokens = Some(usage_tokens);
    state.last_usage_pass = pass;
    store_state(tx, session, &state)
}

impl EngineState {
    /// The session's stored state as readers outside a pass see it (search, `ctx_expand`,
    /// the dashboard): `None` before its first pass, and for a blob this build cannot read,
    /// which a reader then treats as a session not yet passed (the pass itself refuses it,
    /// [`EngineError::CorruptState`]).
    pub fn read(tx: &ReadTx<'_>, session: &SessionId) -> mc_store::Result<Option<Self>> {
        Ok(tx
            .engine_state(session)?
            .and_then(|json| serde_json::from_str(&json).ok()))
    }
}

/// The session's stored state, if it has any.
pub(crate) fn load_state(tx: &WriteTx<'_>, session: &SessionId) -> Result<Option<EngineState>> {
    let Some(json) = tx.engine_state(session)? else {
        return Ok(None);
    };
    serde_json::from_str(&json)
        .map(Some)
        .map_err(|error| EngineError::CorruptState {
            session: session.clone(),
            reason: error.to_string(),
        })
}

/// Stores the session's state, replacing the previous blob.
pub(crate) fn store_state(
    tx: &WriteTx<'_>,
    session: &SessionId,
    state: &EngineState,
) -> Result<()> {
    let json = serde_json::to_string(state).map_err(|error| EngineError::CorruptState {
        session: session.clone(),
        reason: error.to_string(),
    })?;
    tx.put_engine_state(session, &json)?;
    Ok(())
}

/// Whether a counter is at its default, for leaving it out of the stored blob.
fn is_zero(value: &u64) -> bool {
    *value == 0
}
