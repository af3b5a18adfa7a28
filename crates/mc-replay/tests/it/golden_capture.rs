//! Golden check: the Claude Code capture replayed through `passthrough` (with Claude Code's
//! breakpoints, as every strategy renders them) reproduces the recorded cache pattern.

use mc_replay::{ReplayOptions, replay};
use mc_sim::strategy::StrategyKind;

use crate::shared_data;

/// Each call's simulated `cache_read + cache_write` against the recorded one (the issue
/// allows 5%; mc-sim's calibration measured −1.6..+2.4% on this session). Every call is
/// checked, the compaction call (step 13, sent with its own system prompt and one tool)
/// included.
const MAX_ERROR: f64 = 0.05;

#[test]
fn passthrough_reproduces_the_recorded_cache_reads_and_writes() {
    let recordings = shared_data::load("anthropic-capture/claude-code-traffic.jsonl");
    let options = ReplayOptions {
        strategies: vec![StrategyKind::Passthrough],
        ..ReplayOptions::default()
    };
    let report = replay(&recordings, &options).unwrap();
    let steps = &report.runs[0].steps;
    assert_eq!(steps.len(), 17);
    let mut worst: f64 = 0.0;
    for (point, step) in steps.iter().zip(&recordings[0].steps) {
        let recorded = step.recorded.unwrap();
        let (read, write) = (recorded.cache_read.unwrap(), recorded.cache_write.unwrap());
        assert_eq!(
            (point.cache_read > 0, point.cache_write > 0),
            (read > 0, write > 0),
            "step {}: simulated read {} write {}, recorded read {read} write {write}",
            point.step,
            point.cache_read,
            point.cache_write
        );
        let recorded_total = (read + write) as f64;
        let error =
            ((point.cache_read + point.cache_write) as f64 - recorded_total) / recorded_total;
        worst = worst.max(error.abs());
        assert!(
            error.abs() <= MAX_ERROR,
            "step {}: cached tokens off by {error:+.3} (simulated read {} write {}, recorded read {read} write {write})",
            point.step,
            point.cache_read,
            point.cache_write
        );
    }
    eprintln!("worst relative cache read+write error: {worst:.4}");
    assert!(
        recordings[0].steps[13].context.is_some(),
        "the compaction call keeps its own prefix"
    );
}
