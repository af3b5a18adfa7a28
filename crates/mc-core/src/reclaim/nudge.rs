//! The reminder that tells the model its context holds a lot of old tool output.

use super::ReclaimConfig;

/// A short reminder, once at least `nudge_threshold_tokens` of tool output are unreduced;
/// `None` below that, and for `nudge_quiet_turns` after a reduction.
///
/// `turns_since_reduction` is `None` when the session never reduced; a caller may count an
/// earlier reminder as a reduction, so the reminder is not repeated turn after turn. The
/// text depends only on its arguments, with the token count rounded down to thousands, and
/// says only what holds whatever tools the client offers: old output is cleared on its own,
/// and what is cleared can be fetched again. The caller appends it only on a pass allowed to
/// change bytes, and replays the same bytes after.
pub fn nudge(
    unreduced_tokens: u64,
    turns_since_reduction: Option<u32>,
    config: &ReclaimConfig,
) -> Option<String> {
    if unreduced_tokens < config.nudge_threshold_tokens.max(1) {
        return None;
    }
    if turns_since_reduction.is_some_and(|turns| turns < config.nudge_quiet_turns) {
        return None;
    }
    let thousands = unreduced_tokens / 1_000;
    Some(format!(
        "[context note] About {thousands}K tokens of earlier tool output are still in context. \
         Older tool output is cleared automatically as the context fills, leaving \
         [dropped §N§] in its place; re-read a file or re-run a command if you need its \
         output again."
    ))
}
