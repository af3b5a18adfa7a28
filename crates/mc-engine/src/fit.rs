//! The engine's side of keeping every request inside the window: sizes of what is already
//! shown smaller, oversized parts at their first appearance, the token-bounded protection,
//! and the shrink plan (the decisions themselves are `mc_core::window_fit`'s).

use std::collections::{BTreeMap, BTreeSet};

use mc_core::reduction::{MIN_EXCERPT_CHARS, PartShown, Reshape, render_message};
use mc_core::tags::{TagIndex, TagNo, UnitRef, is_taggable};
use mc_core::window_fit::{
    ShrinkInputs, ShrinkPlan, clipped_call_tokens, excerpt_tokens, oversized, oversized_keep_chars,
    plan_shrink, protected_within, shrink_candidates,
};
use mc_core::{Message, Part, Role};

use crate::part_tokens::{PartTokens, part_tokens};
use crate::pass::CountText;
use crate::state::EngineState;

/// The estimated tokens of reshaped units as they render, by unit ("ordinal:part"): counted
/// once when the unit is reshaped, so the prompt's estimate is exact for them on every later
/// pass without rendering them again.
pub(crate) type ShownTokens = BTreeMap<String, u64>;

fn key(unit: UnitRef) -> String {
    format!("{}:{}", unit.ordinal, unit.part)
}

/// The tokens an excerpted unit of `size` keeping `keep` characters shows: as counted when it
/// was reshaped, else estimated.
pub(crate) fn shown_size(shown_tokens: &ShownTokens, unit: UnitRef, size: u64, keep: u32) -> u64 {
    shown_tokens
        .get(&key(unit))
        .copied()
        .unwrap_or_else(|| excerpt_tokens(size, keep))
        .min(size)
}

/// Counts how the part at `unit` renders when shown as `shown`, and remembers it.
pub(crate) fn remember_shown(
    shown_tokens: &mut ShownTokens,
    messages: &[Message],
    unit: UnitRef,
    shown: PartShown,
    count: CountText<'_>,
) {
    let part = usize::try_from(unit.ordinal)
        .ok()
        .and_then(|ordinal| messages.get(ordinal))
        .and_then(|message| {
            Some((
                message.role,
                message.parts.get(usize::try_from(unit.part).ok()?)?,
            ))
        });
    let Some((role, part)) = part else {
        return;
    };
    let single = Message::new(role, vec![part.clone()]);
    let rendered = render_message(&single, &[shown]);
    let tokens = rendered
        .parts
        .iter()
        .map(|part| part_tokens(part, count))
        .sum();
    shown_tokens.insert(key(unit), tokens);
}

/// Tokens that what `reshape` shows smaller saves against showing it whole, for units of
/// messages from ordinal `from` on: excerpts of units not dropped (`hidden`), and clipped
/// calls.
pub(crate) fn reshape_saved(
    reshape: &Reshape,
    shown_tokens: &ShownTokens,
    tags: &TagIndex,
    counts: &PartTokens,
    hidden: &dyn Fn(TagNo) -> bool,
    from: u64,
) -> u64 {
    let excerpts: u64 = reshape
        .excerpts
        .iter()
        .filter(|&(&tag, _)| !hidden(tag))
        .filter_map(|(&tag, &keep)| {
            let unit = tags.unit_of(tag).filter(|unit| unit.ordinal >= from)?;
            let size = counts.of(unit.ordinal, unit.part);
            Some(size.saturating_sub(shown_size(shown_tokens, unit, size, keep)))
        })
        .sum();
    let calls: u64 = reshape
        .clipped_calls
        .iter()
        .filter(|call| call.ordinal >= from)
        .map(|&call| {
            let size = counts.of(call.ordinal, call.part);
            let shown = shown_tokens
                .get(&key(call))
                .copied()
                .unwrap_or(clipped_call_tokens(size));
            size.saturating_sub(shown)
        })
        .sum();
    excerpts + calls
}

/// Shows the oversized parts of the messages from ordinal `first_new` on as excerpts (tagged
/// units) or skeletons (tool calls). These messages were never sent, so nothing cached
/// changes: a part too large for the window is shown smaller from its first appearance.
/// `limit` is the usable window in estimated tokens.
pub(crate) fn reshape_oversized(
    state: &mut EngineState,
    messages: &[Message],
    first_new: u64,
    tags: &TagIndex,
    counts: &PartTokens,
    limit: u64,
    count: CountText<'_>,
) {
    let keep = oversized_keep_chars(limit);
    let first = usize::try_from(first_new).unwrap_or(usize::MAX);
    for (index, message) in messages.iter().enumerate().skip(first) {
        let ordinal = index as u64;
        for (part_index, part) in message.parts.iter().enumerate() {
            let Ok(part_no) = u32::try_from(part_index) else {
                break;
            };
            let size = counts.of(ordinal, part_no);
            if !oversized(size, limit) || message.role == Role::System {
                continue;
            }
            let unit = UnitRef {
                ordinal,
                part: part_no,
            };
            let shown = if matches!(part, Part::ToolCall { .. }) {
                state.reshape.clipped_calls.insert(unit);
                PartShown::Skeleton
            } else if is_taggable(part)
                && !matches!(part, Part::Media { .. })
                && let Some(tag) = tags.tag_of(unit)
            {
                state.reshape.excerpts.insert(tag, keep);
                PartShown::Excerpt(tag, keep)
            } else {
                continue;
            };
            remember_shown(&mut state.shown_tokens, messages, unit, shown, count);
        }
    }
}

/// What the window fit knows about the session on this pass.
pub(crate) struct FitFacts<'a> {
    pub tail: &'a [(u64, &'a Message)],
    pub tags: &'a TagIndex,
    pub counts: &'a PartTokens,
    pub reshape: &'a Reshape,
    /// Tags not shown whole after this pass's drops (landed, landing, decided by a lane).
    pub hidden: &'a BTreeSet<TagNo>,
    pub protected_count: u32,
    /// The protection budget, in estimated tokens.
    pub protected_budget: u64,
    pub keep_chars: u32,
    pub task_ordinal: Option<u64>,
}

/// How many of the newest tags fit the protection budget, as they are shown now.
pub(crate) fn protected_in_full(facts: &FitFacts<'_>) -> u32 {
    let sizes = facts
        .tags
        .newest_first(facts.protected_count)
        .map(|assignment| {
            if facts.hidden.contains(&assignment.tag) {
                return 0;
            }
            let size = facts
                .counts
                .of(assignment.unit.ordinal, assignment.unit.part);
            match facts.reshape.excerpts.get(&assignment.tag) {
                Some(&keep) => excerpt_tokens(size, keep),
                None => size,
            }
        });
    protected_within(sizes, facts.protected_count, facts.protected_budget)
}

/// The shrink plan for a prompt estimated at `projected` (after every other decision of the
/// pass), against `limit` and, on a pressure bust, `pressure_target` (estimated tokens).
pub(crate) fn shrink(
    facts: &FitFacts<'_>,
    projected: u64,
    pressure_target: Option<u64>,
    limit: u64,
) -> ShrinkPlan {
    let hidden = |tag: TagNo| facts.hidden.contains(&tag);
    let part_tokens = |ordinal: u64, part: u32| facts.counts.of(ordinal, part);
    let mut inputs = ShrinkInputs {
        messages: facts.tail,
        tags: facts.tags,
        hidden: &hidden,
        reshape: facts.reshape,
        part_tokens: &part_tokens,
        protected_count: facts.protected_count,
        protected_in_full: protected_in_full(facts),
        keep_chars: facts.keep_chars,
        task_ordinal: facts.task_ordinal,
    };
    let plan = plan_shrink(
        &shrink_candidates(&inputs),
        projected,
        pressure_target,
        limit,
    );
    if plan.fits || facts.keep_chars <= MIN_EXCERPT_CHARS {
        return plan;
    }
    // Excerpts of the usual size do not fit: the smallest ones might (a large fixed prompt
    // leaves a small window little room), and they are what the minimal rendering is.
    inputs.keep_chars = MIN_EXCERPT_CHARS;
    plan_shrink(
        &shrink_candidates(&inputs),
        projected,
        pressure_target,
        limit,
    )
}
