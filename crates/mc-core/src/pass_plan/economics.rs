//! Whether a bust at the execute threshold pays for itself (DESIGN §5: weigh each bust).
//!
//! Prices are in thousandths of the base input price, integers so the decision is exact and
//! identical on every platform. Anthropic's prompt cache reads at 0.1x and writes at 1.25x
//! (5-minute TTL) or 2x (1-hour TTL).
//!
//! Let R be the tokens the bust removes (queued drops + reclaim), P the cached tokens it
//! rewrites, w the write price, r the read price, T the turns still expected to re-read them:
//!
//! - Not busting this turn reads P at r.
//! - Busting writes the region again, minus what it removed: (P − R) at w.
//! - Extra cost now: (P − R)·w − P·r = P·(w − r) − R·w.
//! - Saving later: each of the T later turns reads R fewer cached tokens: R·T·r.
//!
//! So the bust pays when **R · (T·r + w) ≥ P · (w − r)**. With the defaults (T = 10, r = 0.1,
//! 5-minute w = 1.25) that is R ≥ 0.51·P; with a 1-hour cache R ≥ 0.63·P.
//!
//! Deferring is not free either: a bust is inevitable once usage reaches the force band, and
//! a forced bust pays the same rewrite with less choice about what lands. So at the execute
//! threshold a bust is also taken when, at this turn's growth rate, usage would reach the
//! force band within T turns. With nothing to land (R = 0 and `m[1]` unchanged) neither rule
//! busts: the rewrite would buy nothing.

use crate::config::{CacheTtl, Tokens};

use super::inputs::PassInputs;
use super::usage::UsageLevel;

/// T: turns a removed token would otherwise still be re-read. Agent sessions run tens to
/// hundreds of turns, but the next natural bust (TTL expiry, the next threshold crossing, a
/// fold) comes sooner; 10 turns is the horizon over which deferring is actually paid for,
/// and keeps the projection of growth short enough to trust.
pub const EXPECTED_REMAINING_TURNS: u64 = 10;

/// The working-set horizon's cap by default: below the execute threshold a bust is weighed
/// over the cycle it ends ([`BustEconomics::weigh_cycle`]), counted at most this many turns
/// (see [`crate::config::PassConfig::working_set_horizon_turns`]).
///
/// Chosen by replay (`replay --window 200000`, controlled cost against `autocompact` on the
/// shared swe trajectories / on the long generated session): a cap of 10 gives 1.064 / 0.944,
/// 20 gives 0.912 / 0.938, 40 and above 0.910 / 0.938 (a fixed 10-turn horizon, the rule
/// before cycles: 0.930 / 0.934; none at all: 1.094 / 1.012). 40 keeps the cycle's own
/// horizon in every cycle those sessions have while bounding a very long quiet one.
pub const WORKING_SET_HORIZON_TURNS: u32 = 40;

/// Below the execute threshold, a bust must remove at least this many tokens: smaller ones
/// would bust again and again for little (the same floor the emergency reclaim keeps).
pub const MIN_WORKING_SET_REMOVAL: u64 = 2_000;

/// r: cache read price in thousandths of the input price (0.1x).
pub const READ_PRICE_PER_MILLE: u64 = 100;

/// w: cache write price in thousandths of the input price for a TTL: 1.25x for 5 minutes,
/// 2x for 1 hour. A cache that never expires is priced like the 5-minute cache, the
/// cheaper write premium known, because its provider's write price is not known.
pub const fn write_price_per_mille(ttl: CacheTtl) -> u64 {
    match ttl {
        CacheTtl::FiveMinutes | CacheTtl::Never => 1_250,
        CacheTtl::OneHour => 2_000,
    }
}

/// The weighing of one candidate bust, kept for the plan's reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BustEconomics {
    /// R: tokens removed from every later request.
    pub removed_tokens: Tokens,
    /// P: cached tokens the bust rewrites.
    pub rewritten_tokens: Tokens,
    /// R · (T·r + w), in thousandths of input-token prices.
    pub saving: u128,
    /// P · (w − r), in thousandths of input-token prices (plus r · S for a cycle's weighing).
    pub cost: u128,
    /// T: the turns the saving was counted over.
    pub turns: u64,
    /// Usage projected T turns ahead at this turn's growth, without a bust.
    pub projected_tokens: Tokens,
    /// The projection reaches the force band.
    pub force_band_ahead: bool,
    /// Something would land (R > 0 or `m[1]` changed).
    pub has_work: bool,
}

impl BustEconomics {
    /// Weighs a bust that removes `inputs.pending` and rewrites `rewritten` tokens, over
    /// [`EXPECTED_REMAINING_TURNS`].
    pub fn weigh(inputs: &PassInputs, usage: &UsageLevel, rewritten: Tokens) -> Self {
        Self::weigh_over(inputs, usage, rewritten, EXPECTED_REMAINING_TURNS)
    }

    /// [`Self::weigh`] over a horizon of `turns`.
    pub fn weigh_over(
        inputs: &PassInputs,
        usage: &UsageLevel,
        rewritten: Tokens,
        turns: u64,
    ) -> Self {
        let removed = inputs.pending.removable_tokens();
        let write = u128::from(write_price_per_mille(inputs.ttl));
        let read = u128::from(READ_PRICE_PER_MILLE);
        let saving = u128::from(removed.get()) * (u128::from(turns) * read + write);
        let cost = u128::from(rewritten.get()) * (write - read.min(write));
        let growth = inputs
            .prompt_tokens_estimate
            .get()
            .saturating_sub(inputs.last_usage_tokens.get());
        let projected = Tokens(
            usage
                .usage_tokens
                .get()
                .saturating_add(growth.saturating_mul(EXPECTED_REMAINING_TURNS)),
        );
        Self {
            removed_tokens: removed,
            rewritten_tokens: rewritten,
            saving,
            cost,
            turns,
            projected_tokens: projected,
            force_band_ahead: usage.reaches_force_band(projected),
            has_work: inputs.pending.has_work(),
        }
    }

    /// Weighs a bust below the execute threshold as the end of a cycle (the passes since the
    /// last bust), capped at `max_turns` turns.
    ///
    /// A fixed horizon assumes the removed tokens would be re-read T more times, but the next
    /// bust comes after about as many turns as this cycle took: sooner in a session whose
    /// output piles up fast, later in a slow one. So the cycle itself is the horizon, and the
    /// rule is the one for any renewal (replace when the marginal cost reaches the average):
    /// bust at the k-th pass of a cycle when another turn's read of R costs at least the
    /// cycle's average, r·R ≥ (B + r·S) / k, with S the removable tokens the cycle's earlier
    /// passes read and B = P·(w − r) − R·w the bust's own extra cost. That is
    /// **R · (k·r + w) ≥ P · (w − r) + r · S**. When R piles up steadily, S ≈ R·k/2 and this
    /// is the fixed-horizon rule with T = k/2.
    pub fn weigh_cycle(
        inputs: &PassInputs,
        usage: &UsageLevel,
        rewritten: Tokens,
        max_turns: u64,
    ) -> Self {
        let turns = inputs.cycle.passes.saturating_add(1).min(max_turns);
        let mut weighed = Self::weigh_over(inputs, usage, rewritten, turns);
        let read = u128::from(READ_PRICE_PER_MILLE);
        weighed.cost = weighed
            .cost
            .saturating_add(read * u128::from(inputs.cycle.removable_sum.get()));
        weighed
    }

    /// The removal pays for the rewrite within the horizon.
    pub fn pays(&self) -> bool {
        self.saving >= self.cost
    }

    /// Whether the bust should happen now.
    pub fn worth_busting(&self) -> bool {
        self.has_work && self.pays()
    }

    /// Whether a bust below the execute threshold should happen now: it pays, and removes
    /// at least [`MIN_WORKING_SET_REMOVAL`].
    pub fn worth_shrinking_the_working_set(&self) -> bool {
        self.worth_busting() && self.removed_tokens.get() >= MIN_WORKING_SET_REMOVAL
    }

    /// One line for the plan's reasons.
    pub fn describe(&self) -> String {
        if !self.has_work {
            return "nothing to land (no removable tokens, m[1] unchanged): defer".to_owned();
        }
        let verdict = if self.pays() {
            "pays"
        } else if self.force_band_ahead {
            "does not pay yet (the force band is near; work keeps accumulating until it pays or the ceiling is reached)"
        } else {
            "does not pay: defer"
        };
        format!(
            "economics: removes {} tokens, rewrites {} tokens; saving {} vs cost {} (milli-tokens over {} turns), usage in {} turns ≈ {} tokens; {verdict}",
            self.removed_tokens.get(),
            self.rewritten_tokens.get(),
            self.saving,
            self.cost,
            self.turns,
            EXPECTED_REMAINING_TURNS,
            self.projected_tokens.get(),
        )
    }
}
