//! Automatic reclaim: which tagged units to drop without the model asking.
//!
//! Agents rarely call a reduce tool on their own, so these lanes carry most of the reduction
//! work (DESIGN §5 "Tags and reduction"): stale tool output, duplicate output, superseded file
//! reads, errored calls, old reasoning, and an emergency lane for the force band.
//!
//! Every lane is a pure function of stored state: the same messages, tags, drop state and
//! config give the same decisions, byte for byte, so a pass replays identically. Deciding is
//! not applying: the caller lands these decisions only on a pass whose plan may mutate
//! (`PassPlan::may_mutate`), exactly like queued `ctx_reduce` drops; on any other pass they are
//! simply recomputed later.
//!
//! Never reclaimed: protected tags (the newest `protected_count`), tags already landed or
//! queued, the first user message (the task), system-role messages, and parts that carry no
//! tag. The content lanes (stale, duplicate, superseded, errored, emergency) only target
//! tool output: tool results, text in tool-role messages and, for text-protocol agents such as
//! mini-swe-agent that send command output as user text, user text that follows an assistant
//! message (`ReclaimConfig::user_text_as_output`). Prose (instructions, the model's own text)
//! is left to the historian.
//!
//! ```
//! use mc_core::reclaim::{ReclaimConfig, ReclaimInputs, plan_reclaim};
//! use mc_core::reduction::DropState;
//! use mc_core::tags::{TagIndex, TagNo, assign_tags};
//! use mc_core::{Message, Part, Role};
//!
//! let task = Message::new(Role::User, vec![Part::text("fix the bug")]);
//! let listing = "a.rs b.rs c.rs ".repeat(400);
//! let mut stored = vec![task];
//! for _ in 0..2 {
//!     stored.push(Message::new(Role::Assistant, vec![Part::text("```bash\nls\n```")]));
//!     stored.push(Message::new(Role::User, vec![Part::text(listing.clone())]));
//! }
//! let messages: Vec<(u64, &Message)> = (0..).zip(&stored).collect();
//! let mut assignments = Vec::new();
//! for (ordinal, message) in &messages {
//!     let next = TagNo(u32::try_from(assignments.len()).unwrap_or(0) + 1);
//!     assignments.extend(assign_tags(next, *ordinal, message));
//! }
//! let tags = TagIndex::new(assignments);
//! let drops = DropState::default();
//! let estimate = |part: &Part| serde_json::to_string(part).map_or(0, |json| json.len() as u64 / 4);
//! let inputs = ReclaimInputs {
//!     messages: &messages,
//!     tags: &tags,
//!     drops: &drops,
//!     newest_ordinal: 4,
//!     token_estimate: &estimate,
//!     emergency: false,
//! };
//! let config = ReclaimConfig { protected_count: 0, ..ReclaimConfig::default() };
//! let decisions = plan_reclaim(&inputs, &config);
//! // The older listing repeats the newer one: it goes, the newest copy stays.
//! assert_eq!(decisions.len(), 1);
//! assert_eq!(decisions[0].tag, TagNo(3));
//! ```

mod config;
mod duplicate;
mod errored;
mod file_access;
mod fingerprint;
mod index;
mod inputs;
mod nudge;
mod reasoning;
mod stale;
mod superseded;
mod units;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use config::ReclaimConfig;
pub use file_access::read_path;
pub use index::FingerprintIndex;
pub use inputs::{InputReclaim, MIN_INPUT_TOKENS, plan_input_reclaim};
pub use nudge::{NudgeAudience, nudge};
pub use reasoning::{ReasoningDrop, plan_reasoning_drops};

use crate::reduction::DropState;
use crate::tags::{TagIndex, TagNo};
use crate::{Message, Part};

/// The stored state the lanes decide from.
pub struct ReclaimInputs<'a> {
    /// The session's stored messages with their ordinals, oldest first, from the session's
    /// first message: the user message with the lowest ordinal here is taken to be the task.
    /// Passing only the raw tail is safe: its first user message is then spared instead.
    pub messages: &'a [(u64, &'a Message)],
    /// Every tag assignment of the session.
    pub tags: &'a TagIndex,
    /// Drops already queued or landed; they are never decided again.
    pub drops: &'a DropState,
    /// The newest stored ordinal; messages after it are not considered.
    pub newest_ordinal: u64,
    /// The engine's token estimate of one part (mc-core does not tokenise).
    pub token_estimate: &'a dyn Fn(&Part) -> u64,
    /// Usage is high (the engine sets it from the execute threshold on; the bust permission
    /// still decides whether anything lands): the stale lane ignores its age and size
    /// minimums and the model's old narration is eligible (the [`ReclaimLane::Emergency`]
    /// decisions), and reasoning outside the current turn goes whatever its age.
    pub emergency: bool,
}

/// Why a unit is dropped; recorded with the decision so the ledger can explain it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReclaimLane {
    /// Tool output old and large enough to be stale.
    StaleOutput,
    /// An older copy of output a newer one repeats, exactly or nearly.
    DuplicateOutput,
    /// A file read made out of date by a later read or write of the same file.
    SupersededRead,
    /// A failed call's output, some turns after the failure.
    ErroredCall,
    /// Reasoning of a past turn (see [`ReasoningDrop`]; such drops carry no tag).
    OldReasoning,
    /// Force band: tool output no other lane picked, dropped regardless of age and size (or,
    /// for a tool call's input, clipped regardless of age).
    Emergency,
    /// A tool call's input (a file written) made out of date by a later write or whole read
    /// of the same file.
    SupersededInput,
    /// A tool call's input old and large enough to be stale.
    StaleInput,
}

/// One unit to drop, why, and what it frees. Serialisable so the engine can record it and a
/// replay can compare decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimDecision {
    /// The unit's tag.
    pub tag: TagNo,
    /// The lane that picked it (the most specific one, when several did).
    pub lane: ReclaimLane,
    /// The part's estimate minus its `[dropped §N§]` placeholder's. When a drop also removes
    /// the tool call (an old drop without skeleton), the real saving is larger.
    pub tokens: u64,
}

/// Decides which tagged units to drop now, largest first (ties by tag).
///
/// Each tag appears once, under the most specific lane that picked it (superseded read,
/// duplicate, errored, stale, emergency). Emergency decisions are a superset of the normal
/// ones: the same input with `emergency` set only adds decisions.
///
/// This fingerprints every tool output of the session afresh; a caller that plans the same
/// session pass after pass keeps a [`FingerprintIndex`] and calls [`plan_reclaim_with`],
/// which decides the same at the cost of what is new.
pub fn plan_reclaim(inputs: &ReclaimInputs<'_>, config: &ReclaimConfig) -> Vec<ReclaimDecision> {
    plan_reclaim_with(inputs, config, &mut FingerprintIndex::new(config))
}

/// [`plan_reclaim`] with the session's kept `index`, which it first brings up to date.
pub fn plan_reclaim_with(
    inputs: &ReclaimInputs<'_>,
    config: &ReclaimConfig,
    index: &mut FingerprintIndex,
) -> Vec<ReclaimDecision> {
    let in_range = up_to_newest(inputs);
    let bounded = ReclaimInputs {
        messages: &in_range,
        ..*inputs
    };
    let units = units::collect(&bounded, config);
    index.update(&units, config);
    let index: &FingerprintIndex = index;
    let mut lanes = vec![
        (
            ReclaimLane::SupersededRead,
            superseded::superseded_reads(&in_range, &units, index),
        ),
        (
            ReclaimLane::DuplicateOutput,
            duplicate::duplicate_output(&units, index, config),
        ),
        (
            ReclaimLane::ErroredCall,
            errored::errored_calls(&units, index, config),
        ),
        (
            ReclaimLane::StaleOutput,
            stale::stale_output(&units, config),
        ),
    ];
    if inputs.emergency {
        lanes.push((ReclaimLane::Emergency, stale::emergency_output(&units)));
    }
    let freed: BTreeMap<TagNo, u64> = units
        .iter()
        .map(|unit| (unit.tag, unit.freed_tokens))
        .collect();
    let mut picked: BTreeMap<TagNo, ReclaimDecision> = BTreeMap::new();
    for (lane, tags) in lanes {
        for tag in tags {
            let tokens = freed.get(&tag).copied().unwrap_or(0);
            picked
                .entry(tag)
                .or_insert(ReclaimDecision { tag, lane, tokens });
        }
    }
    let mut decisions: Vec<ReclaimDecision> = picked.into_values().collect();
    decisions.sort_by(|a, b| b.tokens.cmp(&a.tokens).then(a.tag.cmp(&b.tag)));
    decisions
}

/// Tool output still shown and not protected, each unit's tag with its estimate: what a
/// reduction could free, and what [`nudge`] weighs and names.
pub fn reducible_outputs(inputs: &ReclaimInputs<'_>, config: &ReclaimConfig) -> Vec<(TagNo, u64)> {
    let in_range = up_to_newest(inputs);
    let bounded = ReclaimInputs {
        messages: &in_range,
        ..*inputs
    };
    units::collect(&bounded, config)
        .iter()
        .filter(|unit| unit.is_reclaimable_output())
        .map(|unit| (unit.tag, unit.size_tokens))
        .collect()
}

/// Tokens of tool output still shown and not protected ([`reducible_outputs`], summed).
pub fn unreduced_output_tokens(inputs: &ReclaimInputs<'_>, config: &ReclaimConfig) -> u64 {
    reducible_outputs(inputs, config)
        .iter()
        .map(|(_, tokens)| tokens)
        .sum()
}

/// The messages up to `newest_ordinal`; later ones are not stored state yet.
pub(crate) fn up_to_newest<'a>(inputs: &ReclaimInputs<'a>) -> Vec<(u64, &'a Message)> {
    inputs
        .messages
        .iter()
        .filter(|(ordinal, _)| *ordinal <= inputs.newest_ordinal)
        .copied()
        .collect()
}
