//! Old reasoning: thinking blocks of turns long past.
//!
//! Thinking parts carry no tag (the model cannot name them in `ctx_reduce`), so this lane
//! returns message/part positions instead of tags. Anthropic requires the thinking blocks of
//! the current tool-use turn (the assistant messages since the last user message that is not
//! just tool results) to come back exactly as signed, or it rejects the request; those are
//! never touched, and neither is anything in the latest assistant message.

use serde::{Deserialize, Serialize};

use super::{ReclaimConfig, ReclaimInputs};
use crate::{Part, Role};

/// A reasoning part (`Thinking` or `RedactedThinking`) to remove.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ReasoningDrop {
    /// The stored message's ordinal.
    pub ordinal: u64,
    /// The part's index in that message.
    pub part: u32,
    /// The part's token estimate: removing it leaves no placeholder.
    pub tokens: u64,
}

/// Reasoning at least `reasoning_age_turns` old (any age outside the current turn in
/// emergency), outside the current tool-use turn, in ordinal then part order.
///
/// A message whose only content is reasoning keeps it: an empty assistant message is invalid.
pub fn plan_reasoning_drops(
    inputs: &ReclaimInputs<'_>,
    config: &ReclaimConfig,
) -> Vec<ReasoningDrop> {
    let messages = inputs.messages;
    // The current turn starts after the last user message without any tool result (a new
    // instruction). A user message that answers a call continues the turn even when the
    // client adds text beside the results (Claude Code appends reminders there).
    let turn_start = messages
        .iter()
        .rposition(|(_, message)| {
            message.role == Role::User && !message.parts.iter().any(Part::is_tool_result)
        })
        .map(|index| index + 1);
    let latest_assistant = messages
        .iter()
        .rposition(|(_, message)| message.role == Role::Assistant);
    let min_age = if inputs.emergency {
        0
    } else {
        config.reasoning_age_turns
    };
    let mut drops = Vec::new();
    let mut later_assistants = 0_u32;
    for (index, (ordinal, message)) in messages.iter().enumerate().rev() {
        let in_current_turn = turn_start.is_none_or(|start| index >= start);
        let has_other_content = message.parts.iter().any(|part| !is_reasoning(part));
        if message.role == Role::Assistant
            && !in_current_turn
            && Some(index) != latest_assistant
            && later_assistants >= min_age
            && has_other_content
            && *ordinal <= inputs.newest_ordinal
        {
            for (part_index, part) in message.parts.iter().enumerate() {
                let Ok(part_no) = u32::try_from(part_index) else {
                    break;
                };
                if is_reasoning(part) {
                    drops.push(ReasoningDrop {
                        ordinal: *ordinal,
                        part: part_no,
                        tokens: (inputs.token_estimate)(part),
                    });
                }
            }
        }
        if message.role == Role::Assistant {
            later_assistants = later_assistants.saturating_add(1);
        }
    }
    drops.sort();
    drops
}

/// Thinking, signed or not, and redacted thinking.
fn is_reasoning(part: &Part) -> bool {
    matches!(part, Part::Thinking { .. } | Part::RedactedThinking { .. })
}
