//! The one bust permission: what a pass may do to the cached prefix (DESIGN §5).
//!
//! Every mutation lane — queued drops, `m[1]` refresh, automatic reclaim, byte-changing
//! nudges — asks [`plan_pass`] through [`PassPlan::may_mutate`]; a lane that changes bytes on
//! a pass the plan refused is a defect. The plan is a pure function of its inputs: the clock,
//! the last usage report and the session state come in as arguments, and the decision goes out
//! with its [`BustCause`] and human-readable reasons for the ledger.
//!
//! Decision order:
//! 1. A dead cache (model or system changed, idle past the TTL) or a first render requires a
//!    [`PassKind::HardFold`]: the prefix is written anyway.
//! 2. Otherwise a live cache busts only with a permission: emergency (refusal level of a
//!    proven window, something to fold), force band (when the bust pays, or unconditionally
//!    with work to land once usage reaches the ceiling, 95% of the usable window), operator
//!    flush, or the execute threshold when [`economics`] says the bust is worth it. A force
//!    band that busted on every turn for the few tokens that aged out since the last bust
//!    would rewrite the whole tail each turn: that is worse than waiting, so the weighing
//!    applies there too, with the emergency lanes' tokens counted as work.
//! 3. A permitted bust is a [`PassKind::SoftBust`], or a [`PassKind::HardFold`] when `m[0]`'s
//!    content changed or `m[1]` is past the refold backstop.
//! 4. Without permission the pass is a [`PassKind::CacheHit`] and nothing may change.
//!
//! Independently, `force` is set in the force band (the engine then counts and lands the
//! emergency reclaim lanes), and `refuse` when even the minimal rendering is over the limit
//! ([`refusal`]). A prompt estimated over the limit is an emergency: it busts whenever there
//! is anything to land, since sending it as it is would fail anyway.
//!
//! ```
//! use mc_core::config::{HistoryConfig, PassConfig, Tokens};
//! use mc_core::pass_plan::{plan_pass, PassInputs, PassKind};
//!
//! let inputs = PassInputs {
//!     now_ms: 60_000,
//!     last_call_ms: Some(0),
//!     head_rendered: true,
//!     usable_window: Some(Tokens(200_000)),
//!     last_usage_tokens: Tokens(50_000),
//!     ..PassInputs::default()
//! };
//! let plan = plan_pass(&inputs, &PassConfig::default(), &HistoryConfig::default(), "claude-sonnet-4-5");
//! assert_eq!(plan.kind, PassKind::CacheHit);
//! assert!(!plan.may_mutate);
//! ```

mod cause;
pub mod economics;
mod fold;
mod host_managed;
mod inputs;
mod kind;
mod permission;
mod refusal;
mod usage;

#[cfg(test)]
mod tests;

pub use cause::BustCause;
pub use fold::{is_cache_expired, m1_backstop};
pub use host_managed::plan_host_managed;
pub use inputs::{BustCycle, PassInputs, PendingWork};
pub use kind::{PassKind, PassPlan};
pub use refusal::{Refusal, prompt_limit, refusal};
pub use usage::{
    MIN_PLANNING_RESERVE_TOKENS, UsageLevel, measure_usage, output_reserve_tokens,
    planning_reserve_tokens, usable_window,
};

use crate::config::{HistoryConfig, PassConfig};

use economics::BustEconomics;
use permission::PermissionFacts;

/// Decides what this pass may do to the cached prefix: THE one bust permission.
///
/// `model` selects the per-model execute threshold; `history` supplies the history budget
/// and the `m[1]` refold backstop.
pub fn plan_pass(
    inputs: &PassInputs,
    pass: &PassConfig,
    history: &HistoryConfig,
    model: &str,
) -> PassPlan {
    let usage = measure_usage(inputs, pass, model);
    let mut reasons = vec![usage.describe()];

    let required = fold::required_fold(inputs);
    let upgrade = fold::upgrade_to_fold(inputs, history);
    let backstop = fold::m1_backstop(inputs, history);
    // Nothing left to fold: no drops or reclaim (R = 0), `m[1]` unchanged, and no head fold
    // pending (m[0] rendered, not dirty, m[1] under the backstop). A fold forced only by a
    // dead cache re-renders the same content, so it does not count.
    let nothing_to_fold = !inputs.pending.has_work()
        && inputs.head_rendered
        && !inputs.head_dirty
        && backstop.is_none();
    let over_limit =
        refusal::prompt_limit(inputs).is_some_and(|limit| inputs.prompt_tokens_estimate > limit);
    let emergency = (refusal::at_refusal_level(inputs, usage.usage_tokens, pass) || over_limit)
        && !nothing_to_fold;

    let (kind, cause) = if let Some((cause, reason)) = required {
        reasons.push(reason);
        (PassKind::HardFold, Some(cause))
    } else {
        let rewritten = fold::rewritten_tokens(inputs, upgrade.is_some());
        let economics = BustEconomics::weigh(inputs, &usage, rewritten);
        let working_set =
            (pass.working_set_horizon_turns > 0 && !usage.execute_reached).then(|| {
                BustEconomics::weigh_cycle(
                    inputs,
                    &usage,
                    rewritten,
                    u64::from(pass.working_set_horizon_turns),
                )
            });
        let facts = PermissionFacts {
            usage: &usage,
            emergency,
            economics: &economics,
            working_set: working_set.as_ref(),
        };
        match permission::grant(inputs, facts, &mut reasons) {
            None => {
                reasons.push("no bust permission: cache hit, nothing changes".to_owned());
                (PassKind::CacheHit, None)
            }
            Some(permitted) => match upgrade {
                Some((fold_cause, reason)) => {
                    reasons.push(reason);
                    (PassKind::HardFold, Some(fold_cause))
                }
                None => {
                    reasons.push("soft bust: m[1] re-renders, queued drops land".to_owned());
                    (PassKind::SoftBust, Some(permitted))
                }
            },
        }
    };

    let refuse = refusal::refusal(inputs);
    if let Some(refusal) = &refuse {
        reasons.push(format!(
            "refused: the minimal rendering ({} tokens) is over the {}-token limit",
            refusal.usage_tokens.get(),
            refusal.limit_tokens.get()
        ));
    }
    PassPlan {
        kind,
        cause,
        may_mutate: kind.may_mutate(),
        force: (usage.force_reached || emergency) && kind.may_mutate(),
        refuse,
        reasons,
    }
}
