//! The reminder that asks the model to reduce its own context.

use super::ReclaimConfig;

/// A short reminder to call `ctx_reduce`, once at least `nudge_threshold_tokens` of tool
/// output are unreduced; `None` below that, and for `nudge_quiet_turns` after a reduction.
///
/// `turns_since_reduction` is `None` when the session never reduced. The text depends only
/// on its arguments, with the token count rounded down to thousands, so a replayed pass
/// appends the same bytes. The caller appends it only on a pass allowed to change bytes.
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
         If you no longer need some of it, drop it with ctx_reduce, naming the §N§ tags \
         (for example drop=\"3-5,12\"). The newest tags are protected."
    ))
}
