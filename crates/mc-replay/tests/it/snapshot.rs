//! The rendered outputs of a tiny synthetic replay, pinned byte for byte: the `--json`
//! report (strategy timings redacted) and the `--plot` SVG.

use mc_replay::{ReplayOptions, render_svg, replay};
use serde_json::json;

use crate::tiny::tiny_recording;

fn tiny_replay() -> mc_replay::Replay {
    let options = ReplayOptions {
        window_tokens: Some(40_000),
        ..ReplayOptions::default()
    };
    replay(&[tiny_recording()], &options).unwrap()
}

#[test]
fn json_report_of_a_tiny_run() {
    let mut report = tiny_replay().to_json();
    for totals in report["strategies"].as_object_mut().unwrap().values_mut() {
        totals["strategy_ms"] = json!("[ms]");
    }
    // Written by serde_json itself: numbers are kept as written (arbitrary precision), a
    // form only serde_json's own writer knows.
    let pretty = serde_json::to_string_pretty(&report).unwrap_or_default();
    insta::assert_snapshot!(pretty);
}

#[test]
fn svg_plot_of_a_tiny_run() {
    let report = tiny_replay();
    let svg = render_svg("tiny run", &report.plot_series(), report.window_tokens);
    insta::assert_snapshot!(svg);
}
