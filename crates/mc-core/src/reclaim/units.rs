//! The tagged units every lane looks at, with the facts the lanes share.
//!
//! Computing age, size, output-ness and eligibility once keeps the lanes small and makes the
//! never-reclaim rules (protected, landed, queued, the task, system messages) live in one
//! place instead of being re-checked, or forgotten, lane by lane.

use super::{ReclaimConfig, ReclaimInputs};
use crate::tags::{TagNo, UnitRef, dropped_placeholder, is_taggable};
use crate::{Part, Role};

/// One tagged part of a stored message.
#[derive(Debug, Clone)]
pub(super) struct Unit<'a> {
    /// Its tag.
    pub tag: TagNo,
    /// Index of its message in `ReclaimInputs::messages`.
    pub message: usize,
    /// Index of the part in its message.
    pub part: u32,
    /// The part itself.
    pub body: &'a Part,
    /// Tool output: a tool result, text in a tool-role message, user text that follows an
    /// assistant message when `user_text_as_output` is on, or media outside the model's own
    /// messages (a pasted screenshot goes stale like a tool's output does).
    pub is_output: bool,
    /// The model's own text (an assistant text part): narration the emergency lane may drop.
    pub is_model_text: bool,
    /// Assistant messages stored after this one.
    pub age_turns: u32,
    /// The estimate of the part as stored.
    /// Zero for a unit no longer shown: no lane weighs it, and estimating is not free.
    pub size_tokens: u64,
    /// What dropping frees: the part's estimate minus its placeholder's. Zero for a unit no
    /// lane may target.
    pub freed_tokens: u64,
    /// Dropped on an earlier pass: never shown again.
    pub is_landed: bool,
    /// Still shown to the model: neither landed nor queued for dropping.
    pub is_visible: bool,
    /// A lane may target it: visible, unprotected, not in the task or a system message.
    pub is_eligible: bool,
}

impl Unit<'_> {
    /// Whether the unit is a tool result the tool itself marked as failed.
    pub fn is_error_result(&self) -> bool {
        matches!(self.body, Part::ToolResult { is_error: true, .. })
    }

    /// A lane that targets tool output may drop it, and doing so frees something.
    pub fn is_reclaimable_output(&self) -> bool {
        self.is_output && self.is_eligible && self.freed_tokens > 0
    }
}

/// Every tagged, taggable part of `inputs.messages`, in message then part order.
/// The task is the user message with the lowest ordinal in
/// `inputs.messages`, so callers pass the session from its first message.
pub(super) fn collect<'a>(inputs: &ReclaimInputs<'a>, config: &ReclaimConfig) -> Vec<Unit<'a>> {
    let messages = inputs.messages;
    let age_of_message = ages(inputs);
    let task = messages
        .iter()
        .enumerate()
        .filter(|(_, (_, message))| message.role == Role::User)
        .min_by_key(|(_, (ordinal, _))| *ordinal)
        .map(|(index, _)| index);
    let first_assistant = messages
        .iter()
        .position(|(_, message)| message.role == Role::Assistant);
    let newest_media = newest_media_tag(inputs);
    let mut all = Vec::new();
    for (index, (ordinal, message)) in messages.iter().enumerate() {
        let after_assistant = first_assistant.is_some_and(|first| index > first);
        for (part_index, part) in message.parts.iter().enumerate() {
            let Ok(part_no) = u32::try_from(part_index) else {
                break;
            };
            if !is_taggable(part) {
                continue;
            }
            let unit = UnitRef {
                ordinal: *ordinal,
                part: part_no,
            };
            let Some(tag) = inputs.tags.tag_of(unit) else {
                continue;
            };
            let is_output = match (message.role, part) {
                (_, Part::ToolResult { .. }) | (Role::Tool, _) => true,
                (Role::User, Part::Text { .. }) => {
                    config.user_text_as_output && after_assistant && Some(index) != task
                }
                (Role::User, Part::Media { .. }) => true,
                _ => false,
            };
            let is_landed = inputs.drops.landed.contains(&tag);
            let is_visible = !is_landed && !inputs.drops.queued.contains(&tag);
            let is_eligible = is_visible
                && !inputs.tags.is_protected(tag, config.protected_count)
                && message.role != Role::System
                && Some(index) != task
                && Some(tag) != newest_media;
            let size_tokens = if is_visible {
                (inputs.token_estimate)(part)
            } else {
                0
            };
            let freed_tokens = if is_eligible {
                let placeholder = Part::text(dropped_placeholder(tag));
                size_tokens.saturating_sub((inputs.token_estimate)(&placeholder))
            } else {
                0
            };
            all.push(Unit {
                tag,
                message: index,
                part: part_no,
                body: part,
                is_output,
                is_model_text: message.role == Role::Assistant && matches!(part, Part::Text { .. }),
                age_turns: age_of_message.get(index).copied().unwrap_or(0),
                size_tokens,
                freed_tokens,
                is_landed,
                is_visible,
                is_eligible,
            });
        }
    }
    all
}

/// The tag of the newest unit that shows media (an image, or a tool result holding one): never
/// reclaimed, however old, since it is what the user or the agent last looked at.
fn newest_media_tag(inputs: &ReclaimInputs<'_>) -> Option<TagNo> {
    let holds_media = |part: &Part| match part {
        Part::Media { .. } => true,
        Part::ToolResult { content, .. } => content
            .iter()
            .any(|inner| matches!(inner, Part::Media { .. })),
        _ => false,
    };
    inputs.messages.iter().rev().find_map(|(ordinal, message)| {
        (0..message.parts.len()).rev().find_map(|index| {
            let part = message.parts.get(index)?;
            let unit = UnitRef {
                ordinal: *ordinal,
                part: u32::try_from(index).ok()?,
            };
            if holds_media(part) {
                inputs.tags.tag_of(unit)
            } else {
                None
            }
        })
    })
}

/// Per message, the number of assistant messages after it.
fn ages(inputs: &ReclaimInputs<'_>) -> Vec<u32> {
    let mut ages = vec![0_u32; inputs.messages.len()];
    let mut later = 0_u32;
    for (index, (_, message)) in inputs.messages.iter().enumerate().rev() {
        if let Some(slot) = ages.get_mut(index) {
            *slot = later;
        }
        if message.role == Role::Assistant {
            later = later.saturating_add(1);
        }
    }
    ages
}
