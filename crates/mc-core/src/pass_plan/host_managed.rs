//! The plan of a pass in a session whose window the host manages (compaction off).
//!
//! Nothing in such a session is dropped, tagged or summarised, so the only bytes the engine
//! owns are its head (`m[0]` with memories, docs and profile; `m[1]` with notes). Rewriting
//! the head rewrites the whole cached prompt behind it, and no removed tokens ever pay that
//! back, so the head changes only when the cache is dead anyway (first render, another model
//! or system prompt, idle past the TTL) or the operator asked for it. Memory changes and new
//! notes wait for that fold. No plan here refuses a request: the window is the host's.

use super::cause::BustCause;
use super::fold::required_fold;
use super::inputs::PassInputs;
use super::kind::{PassKind, PassPlan};

/// The plan of a host-managed pass: a hard fold when the cache is dead or the operator
/// flushed, else a cache hit.
pub fn plan_host_managed(inputs: &PassInputs) -> PassPlan {
    let fold = required_fold(inputs).or_else(|| {
        inputs.operator_flush.then(|| {
            (
                BustCause::OperatorFlush,
                "operator flush: the head re-renders".to_owned(),
            )
        })
    });
    let (kind, cause, reason) = match fold {
        Some((cause, reason)) => (PassKind::HardFold, Some(cause), reason),
        None => (
            PassKind::CacheHit,
            None,
            "the host manages the window: the head waits for a dead cache".to_owned(),
        ),
    };
    PassPlan {
        kind,
        cause,
        may_mutate: kind.may_mutate(),
        force: false,
        refuse: None,
        reasons: vec![reason],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(now_ms: u64) -> PassInputs {
        PassInputs {
            now_ms,
            last_call_ms: Some(1_000),
            head_rendered: true,
            ..PassInputs::default()
        }
    }

    #[test]
    fn the_head_renders_first_then_waits_for_a_dead_cache_or_a_flush() {
        let first = plan_host_managed(&PassInputs::default());
        assert_eq!(
            (first.kind, first.cause),
            (PassKind::HardFold, Some(BustCause::FirstRender))
        );
        let live = plan_host_managed(&rendered(2_000));
        assert_eq!(
            (live.kind, live.cause, live.may_mutate),
            (PassKind::CacheHit, None, false)
        );
        let idle = plan_host_managed(&rendered(1_000 + 5 * 60 * 1000));
        assert_eq!(idle.cause, Some(BustCause::CacheExpired));
        let flushed = plan_host_managed(&PassInputs {
            operator_flush: true,
            ..rendered(2_000)
        });
        assert_eq!(
            (flushed.kind, flushed.cause),
            (PassKind::HardFold, Some(BustCause::OperatorFlush))
        );
    }

    /// However full the window, the plan neither refuses nor forces: the host compacts.
    #[test]
    fn a_full_window_changes_nothing() {
        let full = PassInputs {
            last_usage_tokens: crate::config::Tokens(199_000),
            usable_window: Some(crate::config::Tokens(180_000)),
            proven_window: Some(crate::config::Tokens(200_000)),
            prompt_tokens_estimate: crate::config::Tokens(250_000),
            ..rendered(2_000)
        };
        let plan = plan_host_managed(&full);
        assert_eq!(
            (plan.kind, plan.force, plan.refuse),
            (PassKind::CacheHit, false, None)
        );
    }
}
