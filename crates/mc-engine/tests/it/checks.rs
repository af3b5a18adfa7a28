//! The invariants of issue 4, checked on one pass given the pass before it and the store
//! around it. Each check names the invariant it guards in its failure message.

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};

use mc_core::head::M1_PLACEHOLDER;
use mc_core::pass_plan::PassKind;
use mc_core::reduction::skeleton_input;
use mc_core::tags::{TagIndex, TagNo, UnitRef, dropped_placeholder, strip_tag_imitations};
use mc_core::{Message, Part, Role};
use mc_engine::PassOutcome;
use proptest::prelude::*;

use crate::support::StoreSnapshot;

/// What one pass is checked against.
pub struct PassContext<'a> {
    /// The previous pass's outcome on this session, if any.
    pub previous: Option<&'a PassOutcome>,
    /// The client's conversation as sent.
    pub client: &'a [Message],
    /// The store right before the pass (after any queued drops).
    pub before: &'a StoreSnapshot,
    /// The store right after it.
    pub after: &'a StoreSnapshot,
    /// `config.reduction.protected_tags`.
    pub protected: u32,
}

/// Every invariant that must hold after a successful pass.
pub fn check_pass(ctx: &PassContext<'_>, outcome: &PassOutcome) -> Result<(), TestCaseError> {
    check_kind_and_permission(ctx, outcome)?;
    check_cache_hit_prefix(ctx, outcome)?;
    check_breakpoints(outcome)?;
    check_tool_pairs(ctx, outcome)?;
    check_tags_and_placeholders(ctx, outcome)?;
    // Tags are monotonic: numbered 1, 2, … in the order of the units they name, and a
    // number once given never moves.
    let mut tags = ctx.after.tags.clone();
    tags.sort();
    for (index, assignment) in tags.iter().enumerate() {
        prop_assert_eq!(assignment.tag, TagNo(u32::try_from(index).unwrap() + 1));
    }
    prop_assert!(
        tags.windows(2).all(|pair| pair[0].unit < pair[1].unit),
        "tag order differs from unit order"
    );
    prop_assert!(
        ctx.before.tags.iter().all(|old| tags.contains(old)),
        "a stored tag assignment changed"
    );
    // (6) Nothing lost: the raw log is exactly what the client sent.
    prop_assert!(
        ctx.after.raw_log() == ctx.client,
        "(6) the raw log differs from the client's messages"
    );
    Ok(())
}

/// Providers reject a message with no content blocks: every rendered message keeps one.
pub fn check_no_empty_message(
    client: &[Message],
    outcome: &PassOutcome,
) -> Result<(), TestCaseError> {
    let tail_start = client.len() + 2 - outcome.messages.len();
    for (index, message) in outcome.messages.iter().enumerate() {
        prop_assert!(
            !message.parts.is_empty(),
            "rendered message {} is empty; the client sent {:?}",
            index,
            index
                .checked_sub(2)
                .and_then(|offset| client.get(tail_start + offset))
        );
    }
    Ok(())
}

/// (2) No mutation without permission, and deferred work drains into a bust.
fn check_kind_and_permission(
    ctx: &PassContext<'_>,
    outcome: &PassOutcome,
) -> Result<(), TestCaseError> {
    let plan = &outcome.plan;
    prop_assert_eq!(plan.may_mutate, plan.kind != PassKind::CacheHit);
    prop_assert_eq!(plan.cause.is_none(), plan.kind == PassKind::CacheHit);
    let newly_landed: BTreeSet<TagNo> = ctx
        .after
        .landed()
        .difference(&ctx.before.landed())
        .copied()
        .collect();
    let reported: BTreeSet<TagNo> = outcome.landed.iter().copied().collect();
    prop_assert_eq!(
        &reported,
        &newly_landed,
        "outcome.landed must be exactly the drops the store landed on this pass"
    );
    prop_assert!(
        ctx.before.landed().is_subset(&ctx.after.landed()),
        "a landed drop was un-landed"
    );
    let m = &outcome.messages;
    prop_assert!(m.len() >= 2, "m[0] and m[1] are always present");
    prop_assert!(
        m[1].parts
            .iter()
            .any(|part| matches!(part, Part::Text { text, .. } if !text.is_empty())),
        "m[1] is never empty: {:?}",
        m[1]
    );
    if plan.kind == PassKind::HardFold {
        prop_assert_eq!(
            &m[1].parts,
            &vec![Part::text(M1_PLACEHOLDER)],
            "a hard fold resets m[1] to its placeholder"
        );
    }
    let previous_head = ctx.previous.map(|previous| &previous.messages[..2]);
    match plan.kind {
        PassKind::CacheHit => {
            prop_assert!(
                outcome.landed.is_empty() && outcome.tokens_removed == 0,
                "(2) a cache hit landed {:?}",
                outcome.landed
            );
            prop_assert_eq!(
                &ctx.before.drops,
                &ctx.after.drops,
                "(2) a cache hit changed the drop queue (a lane queued or landed without permission)"
            );
            if let Some(head) = previous_head {
                prop_assert_eq!(head, &m[..2], "(2) a cache hit changed m[0] or m[1]");
            }
        }
        PassKind::SoftBust => {
            if let Some(head) = previous_head {
                prop_assert_eq!(&head[0], &m[0], "a soft bust changed m[0]");
            }
            check_queue_drained(ctx)?;
        }
        PassKind::HardFold => check_queue_drained(ctx)?,
    }
    Ok(())
}

/// After a bust nothing landable waits: every drop still queued is protected.
fn check_queue_drained(ctx: &PassContext<'_>) -> Result<(), TestCaseError> {
    let tags = TagIndex::new(ctx.after.tags.iter().copied());
    let stuck: Vec<TagNo> = ctx
        .after
        .queued()
        .into_iter()
        .filter(|&tag| !tags.is_protected(tag, ctx.protected))
        .collect();
    prop_assert!(
        stuck.is_empty(),
        "a bust left unprotected drops queued: {:?}",
        stuck
    );
    Ok(())
}

/// (1) A cache hit re-sends the previous upstream request as a prefix: the client only
/// appended, so every earlier byte must be identical.
fn check_cache_hit_prefix(
    ctx: &PassContext<'_>,
    outcome: &PassOutcome,
) -> Result<(), TestCaseError> {
    let (PassKind::CacheHit, Some(previous)) = (outcome.plan.kind, ctx.previous) else {
        return Ok(());
    };
    let before = &previous.messages;
    prop_assert!(
        outcome.messages.len() >= before.len(),
        "(1) a cache hit rendered fewer messages ({}) than the previous pass ({})",
        outcome.messages.len(),
        before.len()
    );
    for (index, (old, new)) in before.iter().zip(&outcome.messages).enumerate() {
        let old_json = serde_json::to_string(old).unwrap();
        let new_json = serde_json::to_string(new).unwrap();
        prop_assert!(
            old_json == new_json,
            "(1) cache hit changed message {} of the cached prefix:\nbefore {}\nafter  {}\nplan {:?}",
            index,
            old_json,
            new_json,
            outcome.plan.reasons
        );
    }
    Ok(())
}

/// (4) At most 4 markers, each on an existing, markable block.
fn check_breakpoints(outcome: &PassOutcome) -> Result<(), TestCaseError> {
    let plan = &outcome.breakpoints;
    prop_assert!(
        plan.marker_count() <= 4,
        "(4) {} breakpoints",
        plan.marker_count()
    );
    for &(slot, _) in &plan.slots {
        let part = outcome
            .messages
            .get(slot.message)
            .and_then(|message| message.parts.get(slot.part));
        prop_assert!(
            part.is_some(),
            "(4) breakpoint on a missing block {:?}",
            slot
        );
        prop_assert!(
            !matches!(
                part,
                Some(Part::Thinking { .. } | Part::RedactedThinking { .. })
            ),
            "(4) breakpoint on a thinking block {:?}",
            slot
        );
    }
    Ok(())
}

/// (4) Every rendered tool result has its call at or before it; a call and its result that
/// the client sent in adjacent messages are both shown, in adjacent messages, or both gone.
fn check_tool_pairs(ctx: &PassContext<'_>, outcome: &PassOutcome) -> Result<(), TestCaseError> {
    let rendered = &outcome.messages;
    let mut calls_seen: BTreeSet<&str> = BTreeSet::new();
    for (index, message) in rendered.iter().enumerate() {
        calls_seen.extend(message.tool_call_ids());
        for id in message.tool_result_ids() {
            prop_assert!(
                calls_seen.contains(id),
                "(4) rendered message {} has a result for `{}` with no call before it",
                index,
                id
            );
        }
    }
    let boundary = ctx.client.len() + 2 - rendered.len();
    for (index, message) in rendered.iter().enumerate().skip(2) {
        let ordinal = boundary + index - 2;
        for id in message.tool_call_ids() {
            let answered = answers(ctx.client, ordinal).any(|result| result == id);
            let shown = answers(rendered, index).any(|result| result == id);
            prop_assert!(
                !answered || shown,
                "(4) rendered message {} keeps call `{}` but its result is gone:\n{}",
                index,
                id,
                serde_json::to_string_pretty(&rendered[index..]).unwrap()
            );
        }
        for id in message.tool_result_ids() {
            let called = caller(ctx.client, ordinal)
                .filter(|&(owner, _)| owner >= boundary)
                .is_some_and(|(_, owner)| owner.tool_call_ids().any(|call| call == id));
            let shown = caller(rendered, index)
                .is_some_and(|(_, owner)| owner.tool_call_ids().any(|call| call == id));
            prop_assert!(
                !called || shown,
                "(4) rendered message {} keeps result `{}` but its call is gone:\n{}",
                index,
                id,
                serde_json::to_string_pretty(&rendered[index.saturating_sub(1)..=index]).unwrap()
            );
        }
    }
    Ok(())
}

/// The result ids of the messages answering the assistant message at `index`: every
/// message after it up to the next assistant message (one user message on Anthropic's wire,
/// one tool message per result on OpenAI's).
fn answers<M: Borrow<Message>>(messages: &[M], index: usize) -> impl Iterator<Item = &str> {
    messages
        .get(index + 1..)
        .unwrap_or_default()
        .iter()
        .map(Borrow::borrow)
        .take_while(|message: &&Message| message.role != Role::Assistant)
        .flat_map(Message::tool_result_ids)
}

/// The assistant message (and its index) a result at `index` answers: the last one before it.
fn caller<M: Borrow<Message>>(messages: &[M], index: usize) -> Option<(usize, &Message)> {
    messages[..index]
        .iter()
        .map(Borrow::borrow)
        .enumerate()
        .rev()
        .find(|(_, message)| message.role == Role::Assistant)
}

/// Where the current tool-use turn starts: after the last user message that is not only
/// answering calls, or the latest assistant message if that is later. Anthropic rejects a
/// request whose thinking in this turn differs from what it signed.
fn current_turn_start(client: &[Message]) -> usize {
    let after_instruction = client
        .iter()
        .rposition(|message| {
            message.role == Role::User && !message.parts.iter().any(Part::is_tool_result)
        })
        .map_or(0, |index| index + 1);
    let latest_assistant = client
        .iter()
        .rposition(|message| message.role == Role::Assistant)
        .unwrap_or(client.len());
    after_instruction.min(latest_assistant)
}

/// Thinking is signed by some providers: a thinking block is sent exactly as the client sent
/// it or not at all (old reasoning), in order, and never left out of the current turn. A call
/// is shown as sent, or as its skeleton when its result was dropped.
fn check_untouched_blocks(
    client: &Message,
    rendered: &Message,
    keeps_reasoning: bool,
) -> Result<(), TestCaseError> {
    let thinking = |message: &Message| -> Vec<Part> {
        message
            .parts
            .iter()
            .filter(|part| matches!(part, Part::Thinking { .. } | Part::RedactedThinking { .. }))
            .cloned()
            .collect()
    };
    let sent = thinking(client);
    let shown = thinking(rendered);
    let mut remaining = sent.iter();
    prop_assert!(
        shown
            .iter()
            .all(|part| remaining.any(|original| original == part)),
        "thinking blocks must pass through unchanged, in order: sent {:?}, shown {:?}",
        sent,
        shown
    );
    if keeps_reasoning {
        prop_assert_eq!(
            &shown,
            &sent,
            "thinking of the current turn (or the latest assistant message) was removed"
        );
    }
    for part in &rendered.parts {
        let Part::ToolCall { id, name, input } = part else {
            continue;
        };
        let original = client.parts.iter().find_map(|part| match part {
            Part::ToolCall {
                id: sent,
                name: sent_name,
                input: sent_input,
            } if sent == id && sent_name == name => Some(sent_input),
            _ => None,
        });
        prop_assert!(
            original.is_some_and(|sent| sent == input || skeleton_input(sent) == *input),
            "call `{}` is neither as sent nor its skeleton: {}",
            id,
            input
        );
    }
    Ok(())
}

/// A text's leading engine tag `§N§ ` and what follows it.
fn leading_tag(text: &str) -> Option<(TagNo, &str)> {
    let rest = text.strip_prefix('§')?;
    let end = rest.find('§')?;
    let number: u32 = rest[..end].parse().ok()?;
    let after = rest[end + '§'.len_utf8()..].strip_prefix(' ')?;
    Some((TagNo(number), after))
}

/// The first text of a rendered part: its own text, or a tool result's first text block.
fn first_text(part: &Part) -> Option<&str> {
    match part {
        Part::Text { text, .. } => Some(text),
        Part::ToolResult { content, .. } => content.iter().find_map(|inner| match inner {
            Part::Text { text, .. } => Some(text.as_str()),
            _ => None,
        }),
        _ => None,
    }
}

/// (5) Protected tags never become placeholders, placeholders are exact and name landed
/// tags, and every unit that is not dropped shows its own stable number over its pristine
/// (for the model's own text: cleaned) content.
fn check_tags_and_placeholders(
    ctx: &PassContext<'_>,
    outcome: &PassOutcome,
) -> Result<(), TestCaseError> {
    let tags = TagIndex::new(ctx.after.tags.iter().copied());
    let landed = ctx.after.landed();
    let tail_len = outcome.messages.len() - 2;
    prop_assert!(
        tail_len <= ctx.client.len(),
        "more tail messages than the client sent"
    );
    let boundary = ctx.client.len() - tail_len;
    for tag in &landed {
        prop_assert!(
            !tags.is_protected(*tag, ctx.protected),
            "(5) protected tag {} was dropped",
            tag
        );
    }
    for (offset, rendered) in outcome.messages[2..].iter().enumerate() {
        let ordinal = boundary + offset;
        let client = &ctx.client[ordinal];
        prop_assert_eq!(rendered.role, client.role);
        let keeps_reasoning = ordinal >= current_turn_start(ctx.client);
        check_untouched_blocks(client, rendered, keeps_reasoning)?;
        let mut expected: BTreeMap<TagNo, String> = BTreeMap::new();
        for (part_no, part) in client.parts.iter().enumerate() {
            let unit = UnitRef {
                ordinal: ordinal as u64,
                part: u32::try_from(part_no).unwrap(),
            };
            let Some(tag) = tags.tag_of(unit) else {
                continue;
            };
            if landed.contains(&tag) {
                continue;
            }
            let text = first_text(part).unwrap_or_default();
            let text = match (client.role, part) {
                (Role::Assistant, Part::Text { .. }) => strip_tag_imitations(text).into_owned(),
                _ => text.to_owned(),
            };
            expected.insert(tag, text);
        }
        let mut shown: BTreeMap<TagNo, String> = BTreeMap::new();
        for part in &rendered.parts {
            let Some(text) = first_text(part) else {
                continue;
            };
            if text.starts_with("[dropped") {
                // `[dropped §N§]`, or `[dropped §N§: what it was]`.
                let tag = text
                    .strip_prefix("[dropped §")
                    .and_then(|rest| rest.split_once('§'))
                    .and_then(|(number, _)| number.parse::<u32>().ok())
                    .map(TagNo);
                let well_formed = |tag: TagNo| {
                    text == dropped_placeholder(tag)
                        || text
                            .strip_prefix(&format!("[dropped {tag}: "))
                            .is_some_and(|label| label.ends_with(']') && !label.contains('\n'))
                };
                prop_assert!(
                    tag.is_some_and(well_formed),
                    "(5) malformed placeholder {:?}",
                    text
                );
                if let Some(tag) = tag {
                    prop_assert!(
                        landed.contains(&tag),
                        "(5) placeholder for {} which never landed",
                        tag
                    );
                    prop_assert!(
                        !tags.is_protected(tag, ctx.protected),
                        "(5) placeholder for protected tag {}",
                        tag
                    );
                }
                continue;
            }
            if let Some((tag, rest)) = leading_tag(text) {
                prop_assert!(!landed.contains(&tag), "(5) landed tag {} still shown", tag);
                shown.insert(tag, rest.to_owned());
            }
        }
        prop_assert_eq!(
            shown.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "(5) message {}: shown tags differ from the stored units' tags",
            ordinal
        );
        for (tag, text) in &shown {
            let original = &expected[tag];
            prop_assert!(
                text == original || is_excerpt_of(text, original, *tag),
                "(5) message {}: unit {} is neither as stored nor an excerpt of it:\nshown {:?}\nstored {:?}",
                ordinal,
                tag,
                text,
                original
            );
        }
    }
    Ok(())
}

/// An excerpt of `original`: a head that starts it, one marker line naming `tag`, and a tail
/// that ends it, shorter than the original (the raw log keeps the whole).
fn is_excerpt_of(shown: &str, original: &str, tag: TagNo) -> bool {
    let marker = format!("[§{}§ excerpt: ", tag.0);
    let Some(at) = shown.find(&marker) else {
        return false;
    };
    let head = shown[..at].strip_suffix('\n').unwrap_or(&shown[..at]);
    let Some(line_end) = shown[at..].find('\n') else {
        return false;
    };
    let tail = &shown[at + line_end + 1..];
    original.starts_with(head)
        && original.ends_with(tail)
        && head.len() + tail.len() < original.len()
}
