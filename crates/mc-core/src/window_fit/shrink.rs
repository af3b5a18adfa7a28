//! Shrinking what lanes may not drop: excerpts and clipped tool inputs, in a fixed order.
//!
//! The reclaim lanes drop unprotected units. What is left when they are done (protected
//! units, prose, the task, tool calls among the newest tags) can still exceed the window at
//! small windows. Those units are never dropped to make room; they are shown smaller, stage
//! by stage, oldest first within a stage, until the prompt is under the target:
//! 1. [`ShrinkStage::BeyondBudget`]: the newest tags past the protection budget;
//! 2. [`ShrinkStage::OlderUnits`]: older units no lane dropped (the user's prose, media-free
//!    results of lanes that spared them);
//! 3. [`ShrinkStage::ProtectedInputs`]: large inputs of the newest tool calls;
//! 4. [`ShrinkStage::Protected`]: the protected units within the budget;
//! 5. [`ShrinkStage::Task`]: the task itself.
//!
//! A pressure bust takes stages 1–3, aiming back under the execute threshold; stages 4 and 5
//! are taken only when the prompt would otherwise exceed the window. With every
//! candidate taken the prompt is the minimal rendering: when even that does not fit, the
//! request is refused.

use std::collections::BTreeSet;

use crate::media::inspect_media;
use crate::reduction::Reshape;
use crate::tags::{TagIndex, TagNo, UnitRef, is_taggable};
use crate::{Message, Part, Role};

/// The order in which units are shown smaller (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ShrinkStage {
    /// Among the newest tags, but past the protection budget.
    BeyondBudget,
    /// Older than the newest tags and still shown whole.
    OlderUnits,
    /// Tool calls among the newest tags, with large inputs.
    ProtectedInputs,
    /// Protected units within the budget.
    Protected,
    /// The session's first user message.
    Task,
}

/// One way to show a unit smaller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShrinkAction {
    /// Show the tagged unit as an excerpt keeping about `keep_chars` characters.
    Excerpt {
        /// The unit's tag.
        tag: TagNo,
        /// Characters the excerpt keeps.
        keep_chars: u32,
    },
    /// Show the tool call (by position) with clipped inputs.
    ClipCall(UnitRef),
}

/// A candidate action, its stage and the estimated tokens it saves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShrinkCandidate {
    /// When it is taken.
    pub stage: ShrinkStage,
    /// What it does.
    pub action: ShrinkAction,
    /// Estimated tokens it saves.
    pub saves: u64,
}

/// What the candidates are drawn from.
pub struct ShrinkInputs<'a> {
    /// The rendered tail's stored messages with their ordinals, oldest first.
    pub messages: &'a [(u64, &'a Message)],
    /// The session's tags.
    pub tags: &'a TagIndex,
    /// Whether a tag is not shown whole anyway: landed, or dropped on this pass.
    pub hidden: &'a dyn Fn(TagNo) -> bool,
    /// What is already shown smaller (an excerpt is only ever made smaller).
    pub reshape: &'a Reshape,
    /// The estimate of a stored part, by (ordinal, part).
    pub part_tokens: &'a dyn Fn(u64, u32) -> u64,
    /// How many of the newest tags count as protected.
    pub protected_count: u32,
    /// How many of them fit the protection budget ([`super::protected_within`]).
    pub protected_in_full: u32,
    /// Characters an excerpt keeps.
    pub keep_chars: u32,
    /// The ordinal of the task (the session's first user message).
    pub task_ordinal: Option<u64>,
}

/// Clipping a call that saves less than this is not worth it.
const MIN_CLIP_TOKENS: u64 = 100;
/// Excerpts saving less than this are not worth the marker.
const MIN_EXCERPT_SAVING: u64 = 50;

/// Every candidate, in the order [`plan_shrink`] takes them.
pub fn shrink_candidates(inputs: &ShrinkInputs<'_>) -> Vec<ShrinkCandidate> {
    let protected_from = inputs
        .tags
        .newest_first(inputs.protected_count)
        .last()
        .map_or(u64::MAX, |assignment| assignment.unit.ordinal);
    let mut candidates = Vec::new();
    for &(ordinal, message) in inputs.messages {
        for (index, part) in message.parts.iter().enumerate() {
            let Ok(part_no) = u32::try_from(index) else {
                break;
            };
            let unit = UnitRef {
                ordinal,
                part: part_no,
            };
            let size = (inputs.part_tokens)(ordinal, part_no);
            if matches!(part, Part::ToolCall { .. }) {
                let saves = size.saturating_sub(clipped_call_tokens(size));
                if ordinal >= protected_from
                    && !inputs.reshape.clipped_calls.contains(&unit)
                    && saves >= MIN_CLIP_TOKENS
                {
                    candidates.push(ShrinkCandidate {
                        stage: ShrinkStage::ProtectedInputs,
                        action: ShrinkAction::ClipCall(unit),
                        saves,
                    });
                }
                continue;
            }
            // Media is never excerpted: an image cannot be cut like text (an old one is
            // dropped whole by the reclaim lanes instead).
            if !is_taggable(part) || matches!(part, Part::Media { .. }) {
                continue;
            }
            let Some(tag) = inputs.tags.tag_of(unit) else {
                continue;
            };
            if (inputs.hidden)(tag) || message.role == Role::System {
                continue;
            }
            let stage = if Some(ordinal) == inputs.task_ordinal && message.role == Role::User {
                ShrinkStage::Task
            } else if inputs.tags.is_protected(tag, inputs.protected_in_full) {
                ShrinkStage::Protected
            } else if inputs.tags.is_protected(tag, inputs.protected_count) {
                ShrinkStage::BeyondBudget
            } else {
                ShrinkStage::OlderUnits
            };
            // An excerpt of a tool result cuts its texts; media inside stays whole.
            let media = media_tokens_within(part);
            let text_size = size.saturating_sub(media);
            let shown = match inputs.reshape.excerpts.get(&tag) {
                Some(&keep) => excerpt_tokens(text_size, keep) + media,
                None => size,
            };
            let saves = shown.saturating_sub(excerpt_tokens(text_size, inputs.keep_chars) + media);
            if saves >= MIN_EXCERPT_SAVING {
                candidates.push(ShrinkCandidate {
                    stage,
                    action: ShrinkAction::Excerpt {
                        tag,
                        keep_chars: inputs.keep_chars,
                    },
                    saves,
                });
            }
        }
    }
    // Stable: within a stage, oldest first (the walk's order).
    candidates.sort_by_key(|candidate| candidate.stage);
    candidates
}

/// Tokens of the media inside a tool result (by the provider's rule; a text document's text
/// at four characters a token), which an excerpt keeps whole.
fn media_tokens_within(part: &Part) -> u64 {
    let Part::ToolResult { content, .. } = part else {
        return 0;
    };
    content
        .iter()
        .map(|inner| match inner {
            Part::Media { media, source } => {
                inspect_media(*media, source).tokens(&|text: &str| text.len() as u64 / 4)
            }
            _ => 0,
        })
        .sum()
}

/// Estimated tokens of a unit of `size` tokens shown as an excerpt keeping `keep_chars`
/// characters: the kept characters at three per token (erring high: o200k averages nearer
/// four), the marker line and the tag, and never more than the unit itself. Sizes are
/// estimates by design; the learned token correction absorbs what they miss.
pub fn excerpt_tokens(size: u64, keep_chars: u32) -> u64 {
    (u64::from(keep_chars).div_ceil(3) + MARKER_TOKENS).min(size)
}

/// Estimated tokens of a tool call of `size` tokens shown as a skeleton: its id, name and the
/// first characters of each string, about this much for the calls agents make.
pub fn clipped_call_tokens(size: u64) -> u64 {
    size.min(CLIPPED_CALL_TOKENS)
}

/// Tokens of an excerpt's marker line and tag.
const MARKER_TOKENS: u64 = 50;
/// Tokens of a clipped call, see [`clipped_call_tokens`].
const CLIPPED_CALL_TOKENS: u64 = 100;

/// What shrinking decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShrinkPlan {
    /// The actions taken, in order.
    pub actions: Vec<ShrinkAction>,
    /// Estimated tokens they save.
    pub saves: u64,
    /// The prompt estimate with every candidate taken: the minimal rendering.
    pub minimal: u64,
    /// Whether the prompt after `actions` is within the limit.
    pub fits: bool,
}

/// Takes candidates in order while the prompt (`projected`, the estimate after every other
/// decision of the pass) is over `limit`, or, for candidates of the stages up to
/// [`ShrinkStage::ProtectedInputs`] (never the protected units within the budget, nor the
/// task), over `pressure_target` (set on a pressure bust: land back under the execute
/// threshold, not just under the band).
pub fn plan_shrink(
    candidates: &[ShrinkCandidate],
    projected: u64,
    pressure_target: Option<u64>,
    limit: u64,
) -> ShrinkPlan {
    let mut plan = ShrinkPlan {
        minimal: projected.saturating_sub(candidates.iter().map(|c| c.saves).sum()),
        ..ShrinkPlan::default()
    };
    let mut now = projected;
    let mut excerpted = BTreeSet::new();
    for candidate in candidates {
        let pressured = candidate.stage <= ShrinkStage::ProtectedInputs
            && pressure_target.is_some_and(|target| now > target);
        if !(now > limit || pressured) {
            continue;
        }
        if let ShrinkAction::Excerpt { tag, .. } = candidate.action
            && !excerpted.insert(tag)
        {
            continue;
        }
        plan.actions.push(candidate.action);
        plan.saves += candidate.saves;
        now = now.saturating_sub(candidate.saves);
    }
    plan.fits = now <= limit;
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(stage: ShrinkStage, tag: u32, saves: u64) -> ShrinkCandidate {
        ShrinkCandidate {
            stage,
            action: ShrinkAction::Excerpt {
                tag: TagNo(tag),
                keep_chars: 400,
            },
            saves,
        }
    }

    #[test]
    fn pressure_spares_protected_units_and_the_task_and_the_limit_takes_them_too() {
        let candidates = [
            candidate(ShrinkStage::BeyondBudget, 1, 1_000),
            candidate(ShrinkStage::OlderUnits, 2, 1_000),
            candidate(ShrinkStage::Protected, 3, 1_000),
            candidate(ShrinkStage::Task, 4, 1_000),
        ];
        let pressure = plan_shrink(&candidates, 10_000, Some(8_500), 12_000);
        assert_eq!(pressure.actions.len(), 2);
        assert!(pressure.fits);
        assert_eq!(pressure.minimal, 6_000);
        let over = plan_shrink(&candidates, 10_000, None, 7_500);
        assert_eq!(over.actions.len(), 3);
        assert!(over.fits);
        let hopeless = plan_shrink(&candidates, 10_000, None, 5_000);
        assert_eq!(hopeless.actions.len(), 4);
        assert!(!hopeless.fits);
        assert_eq!(plan_shrink(&candidates, 10_000, None, 10_000).actions, []);
    }
}
