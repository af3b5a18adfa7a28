//! Reclaiming large tool-call inputs: a whole file written, a long patch, a long command.
//!
//! On real coding sessions the calls, not only their outputs, kept the context over the
//! window: a `Write` of a 7K-token file stays in every later request although the file's
//! content is on disk and a later write or read shows it again. Calls carry no tag (they go
//! with their results), so a reclaimed input is recorded by the call's position and shown as
//! a skeleton ([`crate::reduction::skeleton_input`]): the call's id, name, path and the first
//! characters of each string with the size cut, so the call/result pair stays valid on every
//! wire and the result ("file written") keeps its call.
//!
//! The lanes mirror the output lanes and ride the same bust permission:
//! - superseded: a write of a path that a later successful write or whole read of the same
//!   path makes out of date;
//! - stale: an input at least `stale_age_turns` old and `stale_min_tokens` large;
//! - emergency (from the execute threshold on): every input large enough to be worth it.
//!
//! Calls among the newest protected tags are never reclaimed here (the window fit clips them
//! only when the window itself demands it).

use std::collections::{BTreeMap, BTreeSet};

use super::file_access::{FileAccess, classify_call};
use super::{ReclaimConfig, ReclaimInputs, ReclaimLane, up_to_newest};
use crate::reduction::skeleton_input;
use crate::tags::UnitRef;
use crate::{Message, Part, Role};

/// Inputs smaller than this are never reclaimed, in any lane: the skeleton would save little.
pub const MIN_INPUT_TOKENS: u64 = 200;

/// A tool call whose input is reclaimed, why, and what it frees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputReclaim {
    /// The call, by position.
    pub call: UnitRef,
    /// The lane that picked it (the most specific one).
    pub lane: ReclaimLane,
    /// The call's estimate minus its skeleton's.
    pub tokens: u64,
}

/// Decides which calls' inputs to reclaim now, oldest first. `clipped` are the calls already
/// shown as skeletons (never decided again).
pub fn plan_input_reclaim(
    inputs: &ReclaimInputs<'_>,
    config: &ReclaimConfig,
    clipped: &BTreeSet<UnitRef>,
) -> Vec<InputReclaim> {
    let messages = up_to_newest(inputs);
    let protected_from = inputs
        .tags
        .newest_first(config.protected_count)
        .last()
        .filter(|_| config.protected_count > 0)
        .map_or(u64::MAX, |assignment| assignment.unit.ordinal);
    let calls = calls_of(&messages);
    let superseded = superseded_writes(&calls, &messages);
    let mut decisions = Vec::new();
    for call in &calls {
        if call.unit.ordinal >= protected_from || clipped.contains(&call.unit) {
            continue;
        }
        let size = (inputs.token_estimate)(call.part);
        if size < MIN_INPUT_TOKENS {
            continue;
        }
        let lane = if superseded.contains(&call.unit) {
            ReclaimLane::SupersededInput
        } else if call.age_turns >= config.stale_age_turns && size >= config.stale_min_tokens {
            ReclaimLane::StaleInput
        } else if inputs.emergency {
            ReclaimLane::Emergency
        } else {
            continue;
        };
        let tokens = size.saturating_sub((inputs.token_estimate)(&skeleton_of(call.part)));
        if tokens >= MIN_INPUT_TOKENS / 2 {
            decisions.push(InputReclaim {
                call: call.unit,
                lane,
                tokens,
            });
        }
    }
    decisions
}

/// The call with its input clipped, as it renders.
fn skeleton_of(part: &Part) -> Part {
    match part {
        Part::ToolCall { id, name, input } => Part::ToolCall {
            id: id.clone(),
            name: name.clone(),
            input: skeleton_input(input),
        },
        other => other.clone(),
    }
}

/// A tool call of the walked messages.
struct Call<'a> {
    unit: UnitRef,
    part: &'a Part,
    /// Assistant messages stored after it.
    age_turns: u32,
    access: Option<FileAccess>,
    id: &'a str,
}

fn calls_of<'a>(messages: &[(u64, &'a Message)]) -> Vec<Call<'a>> {
    let mut calls = Vec::new();
    let total_assistant = messages
        .iter()
        .filter(|(_, message)| message.role == Role::Assistant)
        .count();
    let mut seen_assistant = 0_usize;
    for &(ordinal, message) in messages {
        if message.role == Role::Assistant {
            seen_assistant += 1;
        }
        let age_turns = u32::try_from(total_assistant - seen_assistant).unwrap_or(u32::MAX);
        for (index, part) in message.parts.iter().enumerate() {
            let (Part::ToolCall { id, name, input }, Ok(part_no)) = (part, u32::try_from(index))
            else {
                continue;
            };
            calls.push(Call {
                unit: UnitRef {
                    ordinal,
                    part: part_no,
                },
                part,
                age_turns,
                access: classify_call(name, input),
                id,
            });
        }
    }
    calls
}

/// Writes made out of date by a later successful write, or whole read, of the same path.
fn superseded_writes(calls: &[Call<'_>], messages: &[(u64, &Message)]) -> BTreeSet<UnitRef> {
    let failed = failed_call_ids(messages);
    let mut later_by_path: BTreeMap<&str, bool> = BTreeMap::new();
    let mut superseded = BTreeSet::new();
    for call in calls.iter().rev() {
        let Some(access) = &call.access else {
            continue;
        };
        if failed.contains(call.id) {
            continue;
        }
        if matches!(access, FileAccess::Write { .. })
            && later_by_path.get(access.path()).copied().unwrap_or(false)
        {
            superseded.insert(call.unit);
        }
        let shows_path = match access {
            FileAccess::Write { .. } => true,
            FileAccess::Read { whole, .. } => *whole,
        };
        if shows_path {
            later_by_path.insert(access.path(), true);
        }
    }
    superseded
}

/// Ids of calls whose result is an error: a failed write or read changes and shows nothing.
fn failed_call_ids<'a>(messages: &[(u64, &'a Message)]) -> BTreeSet<&'a str> {
    messages
        .iter()
        .flat_map(|(_, message)| &message.parts)
        .filter_map(|part| match part {
            Part::ToolResult {
                call_id,
                is_error: true,
                ..
            } => Some(call_id.as_str()),
            _ => None,
        })
        .collect()
}
