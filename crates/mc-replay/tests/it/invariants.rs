//! What must hold for every strategy on real sessions: the window strategies stay inside the
//! window where passthrough overflows it, and the token classes add up.

use mc_replay::{ReplayOptions, replay};
use mc_sim::strategy::StrategyKind;

use crate::shared_data;

#[test]
fn managed_strategies_stay_in_the_window_and_totals_add_up() {
    // Two runs that pass 50K (the largest, 96K, and an 87K one) on Claude Sonnet 4.5.
    let recordings = vec![
        shared_data::trajectory("pytest-dev__pytest-6197"),
        shared_data::trajectory("django__django-11138"),
    ];
    let options = ReplayOptions {
        model: Some("claude-sonnet-4-5".to_owned()),
        window_tokens: Some(50_000),
        ..ReplayOptions::default()
    };
    let report = replay(&recordings, &options).unwrap();
    let totals = |kind: StrategyKind| {
        &report
            .runs
            .iter()
            .find(|run| run.kind == kind)
            .unwrap()
            .totals
    };
    assert!(totals(StrategyKind::Passthrough).over_window > 0);
    assert!(totals(StrategyKind::Passthrough).peak_context > 50_000);
    for kind in [StrategyKind::Autocompact, StrategyKind::Window] {
        let totals = totals(kind);
        assert_eq!(totals.over_window, 0, "{kind} went over the window");
        assert!(totals.peak_context <= 50_000, "{kind}: {totals:?}");
    }
    // The window keeps its budget (window − 20K output reserve), not just the window.
    assert!(totals(StrategyKind::Window).peak_context <= 30_000);
    assert!(totals(StrategyKind::Autocompact).busts.get("autocompact") > Some(&0));

    // Passthrough and both tool clearings (whose 100K trigger is past this window) are refused
    // in both recordings, which ends each of them there.
    for kind in [
        StrategyKind::Passthrough,
        StrategyKind::ClearTools,
        StrategyKind::ClearToolsBatched,
    ] {
        assert_eq!(totals(kind).failed_sessions, 2, "{kind}");
    }

    for run in &report.runs {
        let totals = &run.totals;
        assert_eq!(
            totals.input_uncached + totals.cache_write + totals.cache_read,
            totals.prompt_tokens,
            "{}",
            run.kind
        );
        let accepted: u64 = run
            .steps
            .iter()
            .filter(|point| !point.over_window)
            .map(|point| point.cache_read + point.cache_write)
            .sum();
        assert!(accepted <= totals.prompt_tokens);
        // One point per step replayed: every step of a finished recording, and the steps up
        // to the refused one (the last) of a failed one.
        let mut failed = 0;
        for (index, recording) in recordings.iter().enumerate() {
            let points: Vec<_> = run
                .steps
                .iter()
                .filter(|point| point.recording == index)
                .collect();
            let steps: Vec<usize> = points.iter().map(|point| point.step).collect();
            assert_eq!(steps, (0..points.len()).collect::<Vec<_>>(), "{}", run.kind);
            let refused: Vec<bool> = points.iter().map(|point| point.over_window).collect();
            if refused.contains(&true) {
                failed += 1;
                let mut expected = vec![false; points.len() - 1];
                expected.push(true);
                assert_eq!(refused, expected, "{}: only the last is refused", run.kind);
            } else {
                assert_eq!(points.len(), recording.steps.len(), "{}", run.kind);
            }
        }
        assert_eq!(totals.failed_sessions, failed, "{}", run.kind);
        assert_eq!(totals.over_window, failed, "{}", run.kind);
    }
    // A summary call per compaction, on top of the recorded steps.
    let autocompact = totals(StrategyKind::Autocompact);
    assert_eq!(
        autocompact.requests,
        92 + 115 + autocompact.busts.get("autocompact").copied().unwrap_or(0)
    );
}
