//! The reminder that tells the model its context holds a lot of old tool output.

use super::ReclaimConfig;
use crate::tags::TagNo;

/// How many of the largest outputs a reminder names.
const NAMED_OUTPUTS: usize = 3;

/// What the model that reads the reminder can do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NudgeAudience {
    /// It can call `ctx_reduce`: the reminder names the tool and the largest outputs' tags.
    ReduceTool,
    /// It has no tool of ours: the reminder says only what holds whatever tools the client
    /// offers (old output is cleared on its own, and can be fetched again).
    NoTool,
}

/// A short reminder, once at least `nudge_threshold_tokens` of tool output are unreduced;
/// `None` below that, and for `nudge_quiet_turns` after a reduction.
///
/// `outputs` are the reducible tool outputs, each tag with its estimated size.
/// `turns_since_reduction` is `None` when the session never reduced; a caller may count an
/// earlier reminder as a reduction, so the reminder is not repeated turn after turn. The
/// text depends only on its arguments, with token counts rounded down to thousands. The
/// caller appends it only on a pass allowed to change bytes, and replays the same bytes after.
pub fn nudge(
    outputs: &[(TagNo, u64)],
    turns_since_reduction: Option<u32>,
    config: &ReclaimConfig,
    audience: NudgeAudience,
) -> Option<String> {
    let unreduced: u64 = outputs.iter().map(|(_, tokens)| tokens).sum();
    if unreduced < config.nudge_threshold_tokens.max(1) {
        return None;
    }
    if turns_since_reduction.is_some_and(|turns| turns < config.nudge_quiet_turns) {
        return None;
    }
    let thousands = unreduced / 1_000;
    Some(match audience {
        NudgeAudience::NoTool => format!(
            "[context note] About {thousands}K tokens of earlier tool output are still in \
             context. Older tool output is cleared automatically as the context fills, leaving \
             [dropped §N§] in its place; re-read a file or re-run a command if you need its \
             output again."
        ),
        NudgeAudience::ReduceTool => {
            let mut largest = outputs.to_vec();
            largest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            largest.truncate(NAMED_OUTPUTS);
            let named: Vec<String> = largest
                .iter()
                .map(|(tag, tokens)| format!("{tag} (~{}K)", tokens.div_ceil(1_000)))
                .collect();
            let example: Vec<String> = largest.iter().map(|(tag, _)| tag.0.to_string()).collect();
            format!(
                "[context note] About {thousands}K tokens of earlier tool output are still in \
                 context; the largest are {}. Once you have what you need from an output, call \
                 ctx_reduce with its tags (e.g. \"{}\") to drop it; ctx_expand reads it again \
                 if you need it later.",
                named.join(", "),
                example.join(",")
            )
        }
    })
}
