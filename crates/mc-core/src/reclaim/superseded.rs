//! Superseded file reads: a read made out of date by a later read or write of the same file.
//!
//! After a later write, the earlier read shows content that no longer exists; after a later
//! read of at least the same span, it repeats what is shown again further down. Either way
//! the earlier output is the one to go.

use std::collections::BTreeMap;

use super::file_access::{FileAccess, classify_call, classify_command, fenced_command};
use super::index::FingerprintIndex;
use super::units::Unit;
use crate::tags::TagNo;
use crate::{Part, Role, joined_texts};

/// One recognised file access and what became of it.
struct Access {
    /// Where the call was made: (message index, part index).
    at: (usize, usize),
    access: FileAccess,
    /// Index into the units of the output it produced, if tagged.
    output: Option<usize>,
    /// The call succeeded: its output exists and is not an error. A failed read or write
    /// changes nothing, so it supersedes nothing.
    is_ok: bool,
}

/// Tags of read outputs that a later successful read or write of the same path supersedes.
///
/// A later read supersedes an earlier one only when it is whole, or the same partial read
/// again, and its own output is still shown; a later write supersedes every earlier read.
pub(super) fn superseded_reads(
    messages: &[(u64, &crate::Message)],
    units: &[Unit<'_>],
    index: &FingerprintIndex,
) -> Vec<TagNo> {
    let mut by_path: BTreeMap<String, Vec<Access>> = BTreeMap::new();
    for access in accesses(messages, units, index) {
        by_path
            .entry(access.access.path().to_owned())
            .or_default()
            .push(access);
    }
    let mut dropped = Vec::new();
    for list in by_path.values_mut() {
        list.sort_by_key(|access| access.at);
        for (index, earlier) in list.iter().enumerate() {
            let FileAccess::Read { key, .. } = &earlier.access else {
                continue;
            };
            let Some(unit) = earlier.output.and_then(|output| units.get(output)) else {
                continue;
            };
            if !unit.is_reclaimable_output() {
                continue;
            }
            let superseded = list
                .iter()
                .skip(index + 1)
                .filter(|later| later.is_ok)
                .any(|later| match &later.access {
                    FileAccess::Write { .. } => true,
                    FileAccess::Read {
                        whole,
                        key: later_key,
                        ..
                    } => {
                        (*whole || later_key == key)
                            && later
                                .output
                                .and_then(|output| units.get(output))
                                .is_some_and(|unit| unit.is_visible)
                    }
                });
            if superseded {
                dropped.push(unit.tag);
            }
        }
    }
    dropped.sort();
    dropped
}

/// Every recognised file access: structured tool calls, and text-protocol actions (a fenced
/// shell block in an assistant message whose output is the next message's user text).
fn accesses(
    messages: &[(u64, &crate::Message)],
    units: &[Unit<'_>],
    index: &FingerprintIndex,
) -> Vec<Access> {
    let mut result_of: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, unit) in units.iter().enumerate() {
        if let Part::ToolResult { call_id, .. } = unit.body {
            result_of.insert(call_id.as_str(), index);
        }
    }
    let mut found = Vec::new();
    for (message_index, (_, message)) in messages.iter().enumerate() {
        for (part_index, part) in message.parts.iter().enumerate() {
            let Part::ToolCall { id, name, input } = part else {
                continue;
            };
            let Some(access) = classify_call(name, input) else {
                continue;
            };
            let output = result_of.get(id.as_str()).copied();
            found.push(Access {
                at: (message_index, part_index),
                access,
                output,
                is_ok: output
                    .and_then(|output| units.get(output))
                    .is_some_and(|unit| succeeded(unit, index)),
            });
        }
    }
    for (position, unit) in units.iter().enumerate() {
        let is_user_text = matches!(unit.body, Part::Text { .. })
            && messages
                .get(unit.message)
                .is_some_and(|(_, message)| message.role == Role::User);
        if !unit.is_output || !is_user_text || unit.part != 0 {
            continue;
        }
        let Some(action_index) = unit.message.checked_sub(1) else {
            continue;
        };
        let Some((_, action)) = messages
            .get(action_index)
            .filter(|(_, message)| message.role == Role::Assistant)
        else {
            continue;
        };
        let Some(access) = fenced_command(&joined_texts(&action.parts)).and_then(classify_command)
        else {
            continue;
        };
        found.push(Access {
            at: (action_index, 0),
            access,
            output: Some(position),
            is_ok: succeeded(unit, index),
        });
    }
    found
}

/// The output is not an error: not flagged, no error marker, and a text-protocol
/// `<returncode>` (when present) of 0.
fn succeeded(unit: &Unit<'_>, index: &FingerprintIndex) -> bool {
    !unit.is_error_result()
        && index
            .print(unit.tag)
            .is_none_or(|print| print.reports_success)
}
