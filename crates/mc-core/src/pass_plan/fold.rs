//! When a pass must re-materialise `m[0]` (a hard fold) instead of only re-rendering `m[1]`.
//!
//! Two groups (DESIGN §5): the cache is certainly dead anyway (model or system changed, idle
//! past the TTL) or `m[0]` has never been rendered — these fold on their own, because the
//! prefix must be written regardless; and `m[0]`'s content changed or `m[1]` grew past the
//! backstop — these only turn a pass that may bust anyway into a fold. New compartments,
//! memories and doc edits alone never require a fold: they re-render `m[1]`.

use crate::config::{HistoryConfig, Tokens};

use super::cause::BustCause;
use super::inputs::PassInputs;

/// The session was idle for at least the TTL (or never called upstream): nothing of its
/// prefix is cached any more. A TTL of "never" never expires.
pub fn is_cache_expired(inputs: &PassInputs) -> bool {
    let Some(ttl_ms) = inputs.ttl.duration_ms() else {
        return false;
    };
    match inputs.last_call_ms {
        Some(last) => inputs.now_ms.saturating_sub(last) >= ttl_ms,
        None => true,
    }
}

/// The fold this pass needs whatever usage says: the prefix is not cached (or `m[0]` does
/// not exist yet), so folding costs nothing beyond the write that happens anyway.
///
/// Priority when several hold: the most specific explanation of a dead cache first.
pub fn required_fold(inputs: &PassInputs) -> Option<(BustCause, String)> {
    if inputs.model_changed {
        return Some((
            BustCause::ModelChanged,
            "model changed: its cache is separate, fold m[0]".to_owned(),
        ));
    }
    if inputs.system_changed {
        return Some((
            BustCause::SystemChanged,
            "system prompt changed: every cached byte after it is gone, fold m[0]".to_owned(),
        ));
    }
    if !inputs.head_rendered {
        return Some((
            BustCause::FirstRender,
            "first render of m[0] in this session".to_owned(),
        ));
    }
    if is_cache_expired(inputs) {
        let idle = match inputs.last_call_ms {
            Some(last) => format!(
                "idle {} ms ≥ TTL {}",
                inputs.now_ms.saturating_sub(last),
                inputs.ttl
            ),
            None => "no previous upstream call".to_owned(),
        };
        return Some((
            BustCause::CacheExpired,
            format!("cache expired ({idle}): fold m[0]"),
        ));
    }
    None
}

/// The fold a permitted bust turns into: `m[0]`'s content changed, or `m[1]` is past the
/// backstop. Never a reason to bust on its own.
pub fn upgrade_to_fold(
    inputs: &PassInputs,
    history: &HistoryConfig,
) -> Option<(BustCause, String)> {
    if inputs.head_dirty {
        return Some((
            BustCause::StructuralEdit,
            "m[0] content changed (structural history edit): fold".to_owned(),
        ));
    }
    m1_backstop(inputs, history).map(|reason| (BustCause::M1Backstop, reason))
}

/// Why `m[1]` is past the refold backstop (`HistoryConfig::m1_refold`), if it is.
///
/// Each limit is "over": a value exactly at the limit does not fold. The history budget comes
/// from the same config as the renderer's, so both agree on what "20% of the budget" is.
pub fn m1_backstop(inputs: &PassInputs, history: &HistoryConfig) -> Option<String> {
    let refold = &history.m1_refold;
    let m1 = u128::from(inputs.m1_tokens.get());
    let budget = history.budget_tokens(inputs.usable_window.filter(|w| w.get() > 0));
    if m1 * 100 > u128::from(refold.history_budget_percent.get()) * u128::from(budget.get()) {
        return Some(format!(
            "m[1] backstop: {} tokens > {} of the {} history budget",
            inputs.m1_tokens.get(),
            refold.history_budget_percent,
            budget.get()
        ));
    }
    let m0 = inputs.m0_tokens;
    if m0 >= refold.m0_min_tokens
        && m1 * 100 > u128::from(refold.m0_percent.get()) * u128::from(m0.get())
    {
        return Some(format!(
            "m[1] backstop: {} tokens > {} of m[0] ({} tokens)",
            inputs.m1_tokens.get(),
            refold.m0_percent,
            m0.get()
        ));
    }
    if inputs.m1_memory_updates > refold.max_memory_updates {
        return Some(format!(
            "m[1] backstop: {} memory updates > {}",
            inputs.m1_memory_updates, refold.max_memory_updates
        ));
    }
    None
}

/// Tokens a bust rewrites: the soft-bust region, plus `m[0]` when it folds.
pub fn rewritten_tokens(inputs: &PassInputs, folds: bool) -> Tokens {
    let soft = inputs.prefix_tokens_estimate.get();
    if folds {
        Tokens(soft.saturating_add(inputs.m0_tokens.get()))
    } else {
        Tokens(soft)
    }
}
