//! The permissions that let a pass bust a live cache (DESIGN §5).
//!
//! Deferred work never causes its own bust: a live cache is only rewritten when usage is at
//! the execute threshold and the bust is worth it, when usage is in the force band or at the
//! refusal level, or when the operator asks.

use super::cause::BustCause;
use super::economics::BustEconomics;
use super::inputs::PassInputs;
use super::usage::UsageLevel;

/// What the permission check knows beyond the inputs.
#[derive(Debug, Clone, Copy)]
pub struct PermissionFacts<'a> {
    /// Usage against the thresholds.
    pub usage: &'a UsageLevel,
    /// Usage is at the refusal level of a proven window and something can still be folded.
    pub emergency: bool,
    /// The weighing of a bust at the execute threshold.
    pub economics: &'a BustEconomics,
    /// Below the execute threshold, the weighing over the working-set horizon (`None` when
    /// the horizon is off or the threshold is reached).
    pub working_set: Option<&'a BustEconomics>,
}

/// The strongest permission that holds, recording every one that does (and why the execute
/// threshold declined, when it did) in `reasons`.
///
/// Priority: emergency, force band, operator flush, execute threshold, working set — the
/// ledger names the permission that would have busted even without the others.
pub fn grant(
    inputs: &PassInputs,
    facts: PermissionFacts<'_>,
    reasons: &mut Vec<String>,
) -> Option<BustCause> {
    let mut granted = Vec::new();
    if facts.emergency {
        reasons.push("emergency: refusal level of the proven window reached, folding".to_owned());
        granted.push(BustCause::Emergency);
    }
    if facts.usage.force_reached {
        if facts.economics.worth_busting() {
            reasons.push("force band reached and the bust pays".to_owned());
            granted.push(BustCause::ForceBand);
        } else if facts.usage.ceiling_reached && facts.economics.has_work {
            reasons.push(
                "ceiling reached (refusal level of the usable window): land whatever frees tokens"
                    .to_owned(),
            );
            granted.push(BustCause::ForceBand);
        } else {
            reasons.push(
                "force band reached, but a bust would not pay yet: emergency work accumulates until it pays or the ceiling is reached"
                    .to_owned(),
            );
        }
    }
    if inputs.operator_flush {
        reasons.push("operator flush".to_owned());
        granted.push(BustCause::OperatorFlush);
    }
    if facts.usage.execute_reached {
        reasons.push(facts.economics.describe());
        if facts.economics.worth_busting() {
            granted.push(BustCause::ExecuteThreshold);
        }
    }
    if let Some(working_set) = facts.working_set
        && working_set.has_work
        && working_set.worth_shrinking_the_working_set()
    {
        reasons.push(format!("working set: {}", working_set.describe()));
        granted.push(BustCause::WorkingSet);
    }
    granted.first().copied()
}
