//! Nudges: a short reminder about old tool output, given once and replayed where it was put.
//!
//! The reminder changes bytes, so it is decided only on a pass the bust permission lets
//! mutate (DESIGN §5), appended as a text part to the request's last message, and recorded
//! with its exact text. Every later pass appends the same text to the same stored message,
//! so a cache hit re-sends the bytes the provider cached, and a restart or a retried request
//! renders them again without deciding anything.

use mc_core::reclaim::{NudgeAudience, ReclaimConfig, nudge};
use mc_core::tags::TagNo;
use mc_core::{Message, Role};
use serde::{Deserialize, Serialize};

/// A reminder given on one pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nudge {
    /// The stored message it is appended to: the last message of the request that got it,
    /// always a user message. The next reminder waits `nudge_quiet_turns` turns from here.
    pub ordinal: u64,
    /// The exact text, kept rather than re-rendered so the bytes stay those first sent even
    /// if a later version words the reminder differently.
    pub text: String,
}

/// What deciding a nudge looks at, on a pass allowed to mutate.
pub(crate) struct NudgeInputs<'a> {
    /// The client's conversation; its last message is where a reminder would go.
    pub messages: &'a [Message],
    /// The first ordinal rendered raw: a reminder goes only into the rendered tail.
    pub boundary: u64,
    /// The newest ordinal of the last pass that landed a drop, if any did.
    pub last_reduction_ordinal: Option<u64>,
    /// The reminders given so far.
    pub given: &'a [Nudge],
}

/// The reminder this pass gives, if any, worded for `audience`: the last message is a
/// rendered user message that has none yet, no reduction or reminder came within the quiet
/// turns, and [`nudge`] finds enough reducible output among `outputs` (asked last, as it
/// walks the session).
///
/// Turns are counted in stored assistant messages, not passes: a retried request (a second
/// pass over the same messages) must decide exactly what the first pass decided.
pub(crate) fn decide_nudge(
    inputs: &NudgeInputs<'_>,
    outputs: impl FnOnce() -> Vec<(TagNo, u64)>,
    config: &ReclaimConfig,
    audience: NudgeAudience,
) -> Option<Nudge> {
    let (last, message) = inputs.messages.iter().enumerate().next_back()?;
    let ordinal = u64::try_from(last).ok()?;
    if message.role != Role::User
        || ordinal < inputs.boundary
        || inputs.given.iter().any(|given| given.ordinal == ordinal)
    {
        return None;
    }
    let last_quiet = inputs
        .given
        .iter()
        .map(|given| given.ordinal)
        .chain(inputs.last_reduction_ordinal)
        .max();
    let turns_since = last_quiet.map(|since| turns_after(inputs.messages, since));
    if turns_since.is_some_and(|turns| turns < config.nudge_quiet_turns) {
        return None;
    }
    let text = nudge(&outputs(), turns_since, config, audience)?;
    Some(Nudge { ordinal, text })
}

/// Assistant messages stored after `ordinal`.
fn turns_after(messages: &[Message], ordinal: u64) -> u32 {
    let start = usize::try_from(ordinal).map_or(usize::MAX, |ordinal| ordinal.saturating_add(1));
    let turns = messages
        .get(start..)
        .unwrap_or_default()
        .iter()
        .filter(|message| message.role == Role::Assistant)
        .count();
    u32::try_from(turns).unwrap_or(u32::MAX)
}
