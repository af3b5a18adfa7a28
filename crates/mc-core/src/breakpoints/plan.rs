//! The breakpoint plan and how it is chosen (placement rules in the module doc).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// The provider's limit on `cache_control` markers per request.
pub const MAX_BREAKPOINTS: usize = 4;

/// How many blocks before a marker the provider also checks for a cached prefix.
pub const LOOKBACK_BLOCKS: usize = 20;

/// The lifetime a marker asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Ttl {
    /// `"5m"`, the default ephemeral cache.
    #[serde(rename = "5m")]
    FiveMinutes,
    /// `"1h"`, the extended cache.
    #[serde(rename = "1h")]
    OneHour,
}

/// The TTL the client chose, read from the markers it sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CacheTtlChoice {
    /// The client used no `"1h"` marker: engine markers use 5 minutes.
    #[default]
    Default,
    /// The client used `"1h"` somewhere: every engine marker uses 1 hour.
    OneHour,
}

impl CacheTtlChoice {
    /// The choice implied by the TTLs of the client's own markers.
    pub fn from_client_ttls(ttls: impl IntoIterator<Item = Ttl>) -> Self {
        if ttls.into_iter().any(|ttl| ttl == Ttl::OneHour) {
            Self::OneHour
        } else {
            Self::Default
        }
    }

    /// The TTL every engine marker carries.
    pub const fn ttl(self) -> Ttl {
        match self {
            Self::Default => Ttl::FiveMinutes,
            Self::OneHour => Ttl::OneHour,
        }
    }
}

/// A content block of the rendered conversation: `parts[part]` of `messages[message]`, where
/// message 0 is `m[0]` and message 1 is `m[1]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BlockSlot {
    /// Index of the message.
    pub message: usize,
    /// Index of the block within the message.
    pub part: usize,
}

impl BlockSlot {
    /// The slot of block `part` of message `message`.
    pub const fn new(message: usize, part: usize) -> Self {
        Self { message, part }
    }
}

/// The shape of the rendered prompt the plan is made for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptLayout {
    /// Number of system blocks (0 when there is no system prompt).
    pub system_blocks: usize,
    /// Number of blocks of each message, `m[0]` first, then `m[1]`, then the tail.
    pub message_blocks: Vec<usize>,
    /// Blocks that must not carry a marker (thinking blocks).
    pub unmarkable: BTreeSet<BlockSlot>,
}

impl PromptLayout {
    /// A layout where every block may carry a marker.
    pub fn new(system_blocks: usize, message_blocks: Vec<usize>) -> Self {
        Self {
            system_blocks,
            message_blocks,
            unmarkable: BTreeSet::new(),
        }
    }
}

/// Which blocks carry a marker; every other block carries none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakpointPlan {
    /// The last system block carries a marker (with [`Self::ttl`]).
    pub system: bool,
    /// The TTL of every marker of this plan.
    pub ttl: Ttl,
    /// Message blocks carrying a marker, in prefix order.
    pub slots: Vec<(BlockSlot, Ttl)>,
}

impl BreakpointPlan {
    /// Markers in the request: never more than [`MAX_BREAKPOINTS`].
    pub fn marker_count(&self) -> usize {
        usize::from(self.system) + self.slots.len()
    }

    /// Whether `slot` carries a marker.
    pub fn carries(&self, slot: BlockSlot) -> bool {
        self.slots.iter().any(|&(marked, _)| marked == slot)
    }
}

/// Plans the markers of one request (placement rules in the module doc).
pub fn plan_breakpoints(layout: &PromptLayout, client_ttl: CacheTtlChoice) -> BreakpointPlan {
    let blocks: Vec<BlockSlot> = layout
        .message_blocks
        .iter()
        .enumerate()
        .flat_map(|(message, &count)| (0..count).map(move |part| BlockSlot::new(message, part)))
        .collect();
    let markable = |index: usize| {
        blocks
            .get(index)
            .is_some_and(|slot| !layout.unmarkable.contains(slot))
    };
    // The last markable block at or before `index` within the same message.
    let back_within_message = |index: usize| -> Option<usize> {
        let message = blocks.get(index)?.message;
        (0..=index)
            .rev()
            .take_while(|&i| blocks[i].message == message)
            .find(|&i| markable(i))
    };
    let end_of_message = |message: usize| -> Option<usize> {
        let last = blocks.iter().rposition(|slot| slot.message == message)?;
        back_within_message(last)
    };

    let last = blocks.len().checked_sub(1).and_then(back_within_message);
    let m0_end = end_of_message(0);
    let m1_end = end_of_message(1);
    let mid = match (last, m1_end.or(m0_end)) {
        (Some(last), Some(anchor)) if last > anchor + LOOKBACK_BLOCKS => {
            let target = last - LOOKBACK_BLOCKS;
            // Prefer forward (stays within the last marker's reach), else backward, never onto
            // or before the anchor.
            (target..last)
                .find(|&i| markable(i))
                .or_else(|| (anchor + 1..target).rev().find(|&i| markable(i)))
        }
        _ => None,
    };

    let has_system = layout.system_blocks > 0;
    let mut system = false;
    let mut chosen: BTreeSet<usize> = BTreeSet::new();
    // Priority order; `None` marks the system slot.
    let priority = [
        last.map(Some),
        m1_end.map(Some),
        m0_end.map(Some),
        has_system.then_some(None),
        mid.map(Some),
    ];
    for candidate in priority.into_iter().flatten() {
        if usize::from(system) + chosen.len() >= MAX_BREAKPOINTS {
            break;
        }
        match candidate {
            Some(index) => {
                chosen.insert(index);
            }
            None => system = true,
        }
    }

    let ttl = client_ttl.ttl();
    BreakpointPlan {
        system,
        ttl,
        slots: chosen
            .into_iter()
            .map(|index| (blocks[index], ttl))
            .collect(),
    }
}
