//! Failures a replay reports instead of hiding: a refused request ends the recording for its
//! strategy (`failed_sessions`), and the engine's own failures are counted
//! (`engine_failures`).

use mc_replay::{ReplayOptions, replay};
use mc_sim::strategy::StrategyKind;

use crate::tiny::tiny_recording;

#[test]
fn a_refusal_ends_the_recording_for_that_strategy() {
    // At 40K, passthrough's prompt passes the window at step 6 of 8 in each recording.
    let options = ReplayOptions {
        window_tokens: Some(40_000),
        strategies: vec![StrategyKind::Passthrough, StrategyKind::Window],
        ..ReplayOptions::default()
    };
    let report = replay(&[tiny_recording(), tiny_recording()], &options).unwrap();
    let passthrough = &report.runs[0];
    let steps: Vec<(usize, usize, bool)> = passthrough
        .steps
        .iter()
        .map(|point| (point.recording, point.step, point.over_window))
        .collect();
    let one = |recording| (0..7).map(move |step| (recording, step, step == 6));
    assert_eq!(steps, one(0).chain(one(1)).collect::<Vec<_>>());
    assert_eq!(passthrough.totals.requests, 14);
    assert_eq!(passthrough.totals.over_window, 2);
    assert_eq!(passthrough.totals.failed_sessions, 2);
    let window = &report.runs[1];
    assert_eq!(window.steps.len(), 16);
    assert_eq!(window.totals.failed_sessions, 0);

    let json = report.to_json();
    assert_eq!(json["strategies"]["passthrough"]["failed_sessions"], 2);
    assert_eq!(json["strategies"]["window"]["failed_sessions"], 0);
    let table = report.render_table();
    let warnings: Vec<&str> = table
        .lines()
        .filter(|line| line.starts_with("warning:"))
        .collect();
    assert_eq!(
        warnings,
        [
            "warning: passthrough failed 2 of 2 sessions (a request over the window ends a \
          session, as it would a real client's); its totals are not comparable"
        ]
    );
}

#[test]
fn a_normal_replay_reports_no_engine_failures() {
    let options = ReplayOptions {
        strategies: vec![StrategyKind::Magic, StrategyKind::Window],
        ..ReplayOptions::default()
    };
    let report = replay(&[tiny_recording()], &options).unwrap();
    assert_eq!(report.runs[0].totals.engine_failures, Some(0));
    assert_eq!(report.runs[0].totals.failed_sessions, 0);
    assert_eq!(report.runs[1].totals.engine_failures, None);
    let json = report.to_json();
    assert_eq!(json["strategies"]["magic"]["engine_failures"], 0);
    assert!(
        json["strategies"]["window"]
            .get("engine_failures")
            .is_none(),
        "a baseline has no engine to fail"
    );
    let table = report.render_table();
    assert!(!table.contains("warning:"), "{table}");
}

#[test]
fn a_request_the_engine_refuses_is_not_sent_and_ends_the_session() {
    // A system prompt larger than the window: no rendering of the conversation fits.
    let mut recording = tiny_recording();
    recording.system = vec!["Follow every rule of the style guide. ".repeat(6_000)];
    let options = ReplayOptions {
        window_tokens: Some(40_000),
        strategies: vec![StrategyKind::Magic],
        ..ReplayOptions::default()
    };
    let report = replay(&[recording], &options).unwrap();
    let totals = &report.runs[0].totals;
    assert_eq!(totals.requests, 0, "nothing went up");
    assert_eq!(totals.over_window, 0);
    assert_eq!(totals.failed_sessions, 1);
    assert_eq!(
        totals.engine_failures,
        Some(0),
        "a refusal is not an engine failure"
    );
}
