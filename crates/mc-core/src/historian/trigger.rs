//! When the historian runs, and where the history it may read ends.
//!
//! Two signals (DESIGN §5): the size of the unsummarised history outside the protected live
//! tail, and pressure. Normally a run waits until the eligible history reaches the trigger
//! budget (a smaller chunk gives thin compartments and costs a call all the same); as usage
//! nears the execute threshold it fires on half of that, so compartments exist by the
//! time the bust that would land them comes.

use crate::tags::TagIndex;

/// Points under the execute threshold from which pressure lowers the trigger.
const PRESSURE_POINTS: u64 = 10;

/// The eligible tokens that trigger a run: `budget`, or half of it when usage
/// (`usage_percent` of the usable window) is within ten points of `execute_percent`.
pub fn trigger_tokens(budget: u64, usage_percent: u64, execute_percent: u64) -> u64 {
    if usage_percent + PRESSURE_POINTS >= execute_percent {
        budget / 2
    } else {
        budget
    }
}

/// The first ordinal of the protected live tail: the message of the oldest of the newest
/// `protected_count` tags. Messages from it on are never summarised. `None` when the session
/// has no tags (nothing is eligible yet).
pub fn live_tail_start(tags: &TagIndex, protected_count: u32) -> Option<u64> {
    tags.newest_first(protected_count.max(1))
        .last()
        .map(|assignment| assignment.unit.ordinal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tags::{TagAssignment, TagNo, UnitRef};

    #[test]
    fn pressure_lowers_the_trigger_and_the_live_tail_holds_the_newest_tags() {
        assert_eq!(trigger_tokens(10_000, 40, 65), 10_000);
        assert_eq!(trigger_tokens(10_000, 55, 65), 5_000);
        let tags = TagIndex::new((1..=30).map(|n| TagAssignment {
            tag: TagNo(n),
            unit: UnitRef {
                ordinal: u64::from(n / 2),
                part: n % 2,
            },
        }));
        // The newest 20 tags are 11..=30; tag 11 sits in message 5.
        assert_eq!(live_tail_start(&tags, 20), Some(5));
        assert_eq!(live_tail_start(&TagIndex::new([]), 20), None);
    }
}
