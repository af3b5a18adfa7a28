use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;

fn slots(plan: &BreakpointPlan) -> Vec<BlockSlot> {
    plan.slots.iter().map(|&(slot, _)| slot).collect()
}

fn s(message: usize, part: usize) -> BlockSlot {
    BlockSlot::new(message, part)
}

#[test]
fn short_conversation_marks_system_m0_m1_and_last() {
    // m[0] 1 block, m[1] 1 block, tail: assistant (text + tool call), user (tool result).
    let layout = PromptLayout::new(1, vec![1, 1, 2, 1]);
    let plan = plan_breakpoints(&layout, CacheTtlChoice::Default);
    assert_eq!(
        plan,
        BreakpointPlan {
            system: true,
            ttl: Ttl::FiveMinutes,
            slots: vec![
                (s(0, 0), Ttl::FiveMinutes),
                (s(1, 0), Ttl::FiveMinutes),
                (s(3, 0), Ttl::FiveMinutes)
            ],
        }
    );
    assert_eq!(plan.marker_count(), 4);
}

#[test]
fn no_tail_merges_last_with_m1() {
    let plan = plan_breakpoints(&PromptLayout::new(1, vec![1, 1]), CacheTtlChoice::Default);
    assert!(plan.system);
    assert_eq!(slots(&plan), [s(0, 0), s(1, 0)]);
}

#[test]
fn long_tail_without_system_keeps_m0() {
    let layout = PromptLayout::new(0, [vec![1, 1], vec![2; 15]].concat());
    let plan = plan_breakpoints(&layout, CacheTtlChoice::Default);
    assert!(!plan.system);
    // 32 blocks: m[0] 0, m[1] 1, last 31, mid 31 - 20 = 11 (message 6, part 1).
    assert_eq!(slots(&plan), [s(0, 0), s(1, 0), s(6, 1), s(16, 1)]);
}

#[test]
fn tail_of_exactly_the_lookback_needs_no_mid_marker() {
    let layout = PromptLayout::new(1, [vec![1, 1], vec![1; 20]].concat());
    let plan = plan_breakpoints(&layout, CacheTtlChoice::Default);
    assert_eq!(slots(&plan), [s(0, 0), s(1, 0), s(21, 0)]);
    // With a system prompt the four slots are system, m[0], m[1] and last: a turn adds a few
    // blocks, well within the last marker's lookback, so m[0] is worth more than a mid marker.
    let longer = PromptLayout::new(1, [vec![1, 1], vec![1; 21]].concat());
    let plan = plan_breakpoints(&longer, CacheTtlChoice::Default);
    assert!(plan.system);
    assert_eq!(slots(&plan), [s(0, 0), s(1, 0), s(22, 0)]);
}

#[test]
fn one_hour_anywhere_makes_every_marker_one_hour() {
    let choice = CacheTtlChoice::from_client_ttls([Ttl::FiveMinutes, Ttl::OneHour]);
    assert_eq!(choice, CacheTtlChoice::OneHour);
    assert_eq!(
        CacheTtlChoice::from_client_ttls([]),
        CacheTtlChoice::Default
    );
    let plan = plan_breakpoints(&PromptLayout::new(1, vec![1, 1, 3]), choice);
    assert_eq!(plan.ttl, Ttl::OneHour);
    assert!(plan.slots.iter().all(|&(_, ttl)| ttl == Ttl::OneHour));
}

#[test]
fn thinking_blocks_are_never_marked() {
    // The last message ends with a thinking block (an assistant prefill): mark the text before.
    let mut layout = PromptLayout::new(0, vec![1, 1, 3]);
    layout.unmarkable.insert(s(2, 2));
    assert_eq!(
        slots(&plan_breakpoints(&layout, CacheTtlChoice::Default)),
        [s(0, 0), s(1, 0), s(2, 1)]
    );
}

#[test]
fn empty_conversation_marks_only_the_system() {
    let plan = plan_breakpoints(&PromptLayout::new(2, vec![]), CacheTtlChoice::Default);
    assert!(plan.system);
    assert!(plan.slots.is_empty());
    let nothing = plan_breakpoints(&PromptLayout::default(), CacheTtlChoice::Default);
    assert_eq!(nothing.marker_count(), 0);
}

fn arb_layout() -> impl Strategy<Value = PromptLayout> {
    (
        0usize..4,
        prop::collection::vec(0usize..6, 0..60),
        prop::collection::vec(any::<u8>(), 0..400),
    )
        .prop_map(|(system_blocks, message_blocks, noise)| {
            let mut unmarkable = BTreeSet::new();
            let mut noise = noise.into_iter();
            for (message, &count) in message_blocks.iter().enumerate() {
                for part in 0..count {
                    // About one block in eight is a thinking block.
                    if noise.next().is_some_and(|n| n % 8 == 0) {
                        unmarkable.insert(BlockSlot::new(message, part));
                    }
                }
            }
            PromptLayout {
                system_blocks,
                message_blocks,
                unmarkable,
            }
        })
}

fn flat(layout: &PromptLayout) -> Vec<BlockSlot> {
    layout
        .message_blocks
        .iter()
        .enumerate()
        .flat_map(|(m, &n)| (0..n).map(move |p| BlockSlot::new(m, p)))
        .collect()
}

proptest! {
    #[test]
    fn plans_are_valid(layout in arb_layout(), one_hour in any::<bool>()) {
        let choice = if one_hour { CacheTtlChoice::OneHour } else { CacheTtlChoice::Default };
        let plan = plan_breakpoints(&layout, choice);
        let blocks = flat(&layout);
        let markable: Vec<usize> = (0..blocks.len())
            .filter(|&i| !layout.unmarkable.contains(&blocks[i]))
            .collect();
        let position = |slot: BlockSlot| blocks.iter().position(|&b| b == slot);

        // Never more than 4.
        prop_assert!(plan.marker_count() <= MAX_BREAKPOINTS);
        // The system marker only when there is a system; one TTL for all.
        prop_assert!(!plan.system || layout.system_blocks > 0);
        prop_assert_eq!(plan.ttl, choice.ttl());
        prop_assert!(plan.slots.iter().all(|&(_, ttl)| ttl == plan.ttl));
        // Every marker on an existing, markable block, in strict prefix order.
        let mut previous: Option<usize> = None;
        for &(slot, _) in &plan.slots {
            let index = position(slot);
            prop_assert!(index.is_some(), "{slot:?} does not exist");
            prop_assert!(!layout.unmarkable.contains(&slot));
            prop_assert!(previous < index);
            previous = index;
        }
        // The last block carries one (or the markable block before it in its message).
        if let Some(&last) = blocks.last() {
            let last_markable = markable
                .iter()
                .rev()
                .find(|&&i| blocks[i].message == last.message)
                .map(|&i| blocks[i]);
            if let Some(slot) = last_markable {
                prop_assert_eq!(plan.slots.last().map(|&(s, _)| s), Some(slot));
            }
        }
        // With no system, no slot is wasted: with room left, the ends of m[0] and m[1] are marked.
        let end_of = |message: usize| {
            markable.iter().rev().map(|&i| blocks[i]).find(|b| b.message == message)
        };
        for message in [0, 1] {
            {
                if let Some(slot) = end_of(message) {
                    prop_assert!(plan.carries(slot), "end of m[{message}] unmarked: {plan:?}");
                }
            }
        }
        if layout.system_blocks > 0 && !blocks.is_empty() {
            prop_assert!(plan.system);
        }
        // Without a system prompt, a long tail after m[1] gets a marker within the lookback of
        // the last one.
        if let (0, Some(&(last, _)), Some(anchor)) = (layout.system_blocks, plan.slots.last(), end_of(1).or(end_of(0))) {
            let (last, anchor) = (position(last).unwrap_or(0), position(anchor).unwrap_or(0));
            let reachable = markable.iter().any(|&i| i > anchor && i < last && last - i <= LOOKBACK_BLOCKS);
            if last > anchor + LOOKBACK_BLOCKS && reachable {
                let bridged = plan.slots.iter().any(|&(s, _)| {
                    position(s).is_some_and(|i| i > anchor && i < last && last - i <= LOOKBACK_BLOCKS)
                });
                prop_assert!(bridged, "no mid-tail marker: {:?}", plan);
            }
        }
    }
}
