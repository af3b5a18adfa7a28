//! Tool results paired with their calls across a tail, as a fold that can be extended.
//!
//! Which dropped results go whole and which calls keep clipped inputs depends on every call
//! and result of the tail ([`super::TailDrops`]). Walking the whole tail on every pass cost
//! more than anything else left in rendering a long session, although a pass only appends a
//! turn. The pairing is a left-to-right fold over the tail's parts, so a caller that kept it
//! extends it with the appended messages; what depends on the landed drops is decided from
//! it afterwards.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::drop_label::{call_label, result_label};
use crate::HeldBytes;
use crate::conversation::{Message, Part};
use crate::tags::{TagIndex, TagNo, UnitRef};

/// The calls and results of a tail from `first` up to (not including) `next`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolPairs {
    first: u64,
    next: u64,
    /// The latest call of each id so far, with its label ([`call_label`]).
    open_calls: HashMap<String, (UnitRef, String)>,
    /// Results paired with each call.
    pub(super) results_per_call: BTreeMap<UnitRef, usize>,
    /// Every tagged result, in tail order.
    pub(super) results: Vec<PairedResult>,
}

/// A tagged result of the tail and what its placeholder says if it is dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PairedResult {
    pub unit: UnitRef,
    pub tag: TagNo,
    /// Its call; none when the call is not in the tail.
    pub call: Option<UnitRef>,
    /// Its call's label and its size ([`result_label`]), taken as it was folded.
    pub label: Option<Arc<str>>,
}

impl ToolPairs {
    /// No messages folded yet; the tail starts at ordinal `first`.
    pub fn new(first: u64) -> Self {
        Self {
            first,
            next: first,
            ..Self::default()
        }
    }

    /// The ordinal the tail starts at.
    pub fn first(&self) -> u64 {
        self.first
    }

    /// The ordinal the next folded message must have.
    pub fn next(&self) -> u64 {
        self.next
    }

    /// Folds in `messages`, which must continue the tail at [`Self::next`] in order (any
    /// other message is ignored); each result is paired with the nearest earlier call of the
    /// same id (by position, not id alone: some clients reuse ids such as `call_0` on every
    /// turn). Returns whether a folded result answers a call folded before this extension:
    /// only then can appended messages change how earlier drops show.
    pub fn extend(&mut self, messages: &[(u64, &Message)], tags: &TagIndex) -> bool {
        let extended_from = self.next;
        let mut answers_earlier = false;
        for &(ordinal, message) in messages {
            if ordinal != self.next {
                continue;
            }
            self.next += 1;
            for (index, part) in message.parts.iter().enumerate() {
                let Ok(part_index) = u32::try_from(index) else {
                    continue;
                };
                let unit = UnitRef {
                    ordinal,
                    part: part_index,
                };
                match part {
                    Part::ToolCall { id, name, input } => {
                        self.open_calls
                            .insert(id.clone(), (unit, call_label(name, input)));
                    }
                    Part::ToolResult {
                        call_id, content, ..
                    } => {
                        let call = self.open_calls.get(call_id.as_str());
                        if let Some(&(call, _)) = call {
                            *self.results_per_call.entry(call).or_default() += 1;
                            answers_earlier |= call.ordinal < extended_from;
                        }
                        if let Some(tag) = tags.tag_of(unit) {
                            self.results.push(PairedResult {
                                unit,
                                tag,
                                call: call.map(|&(call, _)| call),
                                label: result_label(call.map(|(_, label)| label.as_str()), content),
                            });
                        }
                    }
                    _ => {}
                }
            }
        }
        answers_earlier
    }
}

impl HeldBytes for ToolPairs {
    /// The open calls with their labels, the counts per call and the results with theirs.
    fn held_bytes(&self) -> usize {
        let open: usize = self
            .open_calls
            .iter()
            .map(|(id, (_, label))| {
                std::mem::size_of::<(String, (UnitRef, String))>()
                    + id.capacity()
                    + label.capacity()
            })
            .sum();
        let results: usize = self
            .results
            .iter()
            .map(|result| {
                std::mem::size_of::<PairedResult>()
                    + result.label.as_ref().map_or(0, |label| label.len())
            })
            .sum();
        std::mem::size_of::<Self>()
            + open
            + self.results_per_call.len() * std::mem::size_of::<(UnitRef, usize, usize)>()
            + results
    }
}
