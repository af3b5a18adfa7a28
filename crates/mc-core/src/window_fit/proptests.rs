//! Properties of the window fit over generated candidates and sizes.

use proptest::prelude::*;

use super::*;
use crate::tags::TagNo;

fn arb_stage() -> impl Strategy<Value = ShrinkStage> {
    prop_oneof![
        Just(ShrinkStage::BeyondBudget),
        Just(ShrinkStage::OlderUnits),
        Just(ShrinkStage::ProtectedInputs),
        Just(ShrinkStage::Protected),
        Just(ShrinkStage::Task),
    ]
}

prop_compose! {
    fn arb_candidates()(raw in prop::collection::vec((arb_stage(), 0..20_000u64), 0..40)) -> Vec<ShrinkCandidate> {
        let mut candidates: Vec<ShrinkCandidate> = raw
            .into_iter()
            .enumerate()
            .map(|(index, (stage, saves))| ShrinkCandidate {
                stage,
                action: ShrinkAction::Excerpt { tag: TagNo(index as u32 + 1), keep_chars: 400 },
                saves,
            })
            .collect();
        candidates.sort_by_key(|candidate| candidate.stage);
        candidates
    }
}

proptest! {
    #[test]
    fn whenever_the_minimal_rendering_fits_the_plan_fits(
        candidates in arb_candidates(),
        floor in 0..50_000u64,
        limit in 1_000..200_000u64,
        pressure in prop::option::of(0..200_000u64),
    ) {
        let total: u64 = candidates.iter().map(|candidate| candidate.saves).sum();
        let projected = floor + total;
        let plan = plan_shrink(&candidates, projected, pressure, limit);
        prop_assert_eq!(plan.minimal, floor);
        prop_assert_eq!(plan.fits, projected - plan.saves <= limit);
        if plan.minimal <= limit {
            prop_assert!(plan.fits);
        }
        // Nothing beyond what the limit or the pressure target asks: without the last action
        // taken, the prompt was still over one of them.
        if projected <= limit && pressure.is_none() {
            prop_assert!(plan.actions.is_empty());
        }
        // Below the limit, protected units within the budget and the task are never taken.
        if projected <= limit {
            for action in &plan.actions {
                let stage = candidates.iter().find(|c| c.action == *action).map(|c| c.stage);
                prop_assert!(stage.is_some_and(|stage| stage <= ShrinkStage::ProtectedInputs));
            }
        }
    }

    #[test]
    fn protection_fits_its_budget(
        sizes in prop::collection::vec(0..20_000u64, 0..40),
        count in 0..30u32,
        budget in 0..100_000u64,
    ) {
        let kept = protected_within(sizes.iter().copied(), count, budget) as usize;
        prop_assert!(kept <= count as usize && kept <= sizes.len());
        prop_assert!(sizes[..kept].iter().sum::<u64>() <= budget);
        if kept < sizes.len().min(count as usize) {
            prop_assert!(sizes[..=kept].iter().sum::<u64>() > budget);
        }
    }

    #[test]
    fn a_learned_correction_stays_bounded_and_round_trips(
        observations in prop::collection::vec((1..500_000u64, 0..900_000u64), 0..30),
        estimate in 0..1_000_000u64,
    ) {
        let mut correction = TokenCorrection::default();
        for (ours, theirs) in observations {
            correction = correction.observe(ours, theirs);
            prop_assert!((TokenCorrection::MIN_PERMILLE..=TokenCorrection::MAX_PERMILLE).contains(&correction.permille));
        }
        // What the correction allows us to estimate never exceeds the provider's limit.
        let limit = correction.apply(estimate);
        prop_assert!(correction.apply(correction.unapply(limit)) <= limit);
    }
}
