//! Stale tool output: large results the agent has long since acted on.

use super::ReclaimConfig;
use super::units::Unit;
use crate::tags::TagNo;

/// Tags of tool output at least `stale_age_turns` old and `stale_min_tokens` large.
///
/// Age and size together: old small output costs little to keep, and new large output is
/// likely what the agent is working with.
pub(super) fn stale_output(units: &[Unit<'_>], config: &ReclaimConfig) -> Vec<TagNo> {
    units
        .iter()
        .filter(|unit| unit.is_reclaimable_output())
        .filter(|unit| unit.age_turns >= config.stale_age_turns)
        .filter(|unit| unit.size_tokens >= config.stale_min_tokens)
        .map(|unit| unit.tag)
        .collect()
}

/// Emergency (force band): every reclaimable tool output and every old piece of the model's
/// own narration outside the protected tags, whatever its age or size, largest first so a
/// caller that needs only part of it can take a prefix.
///
/// The user's words are never dropped automatically. The model's old narration is: folding
/// it into history is the historian's job, but until the historian has caught up, a session
/// in the force band would otherwise keep growing toward the window with nothing the engine
/// may land (the raw log keeps every word, and `ctx_expand` brings it back).
pub(super) fn emergency_output(units: &[Unit<'_>]) -> Vec<TagNo> {
    let mut picked: Vec<&Unit<'_>> = units
        .iter()
        .filter(|unit| {
            unit.is_reclaimable_output()
                || (unit.is_model_text && unit.is_eligible && unit.freed_tokens > 0)
        })
        .collect();
    picked.sort_by(|a, b| b.freed_tokens.cmp(&a.freed_tokens).then(a.tag.cmp(&b.tag)));
    picked.into_iter().map(|unit| unit.tag).collect()
}
