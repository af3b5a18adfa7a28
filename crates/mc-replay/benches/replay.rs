//! Replay speed: all shared swe trajectories (54 runs, 3,778 calls) through the baselines at a
//! 50K window on Claude Sonnet 4.5, the run the "under a minute" target is about.
//!
//! Measured: `replay` alone (loading is outside the timing), once with `passthrough` only as
//! the same-run baseline, once with every strategy; their ratio is what to compare across
//! machines. The passthrough run uses the model's own 200K window, where no call is refused:
//! at 50K a refusal ends a recording, and the baseline would price only part of the calls.
//! Run with `cargo bench -p mc-replay` (release profile).

use std::path::{Path, PathBuf};

use mc_replay::{Replay, ReplayOptions, replay};
use mc_sim::Recording;
use mc_sim::strategy::StrategyKind;

fn main() {
    divan::main();
}

fn trajectories_dir() -> PathBuf {
    std::env::var_os("MC_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .ancestors()
                .map(|ancestor| ancestor.join("shared/data"))
                .chain([PathBuf::from("/work/shared/data")])
                .find(|candidate| candidate.is_dir())
                .unwrap_or_default()
        })
        .join("swe-trajectories")
}

fn load() -> Vec<Recording> {
    let recordings = mc_sim::recording::load(&trajectories_dir(), None);
    assert!(
        recordings.as_ref().is_ok_and(|loaded| loaded.len() == 54),
        "the 54 shared trajectories must load: {recordings:?}"
    );
    recordings.unwrap_or_default()
}

fn run(
    recordings: &[Recording],
    strategies: Vec<StrategyKind>,
    window_tokens: Option<u64>,
) -> Option<Replay> {
    let options = ReplayOptions {
        model: Some("claude-sonnet-4-5".to_owned()),
        window_tokens,
        strategies,
        ..ReplayOptions::default()
    };
    replay(divan::black_box(recordings), &options).ok()
}

/// The calls `kind` priced in `report`.
fn requests(report: Option<&Replay>, kind: StrategyKind) -> u64 {
    report
        .and_then(|report| report.runs.iter().find(|run| run.kind == kind))
        .map_or(0, |run| run.totals.requests)
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn passthrough_only(bencher: divan::Bencher) {
    let recordings = load();
    let strategies = vec![StrategyKind::Passthrough];
    let report = run(&recordings, strategies.clone(), None);
    assert_eq!(requests(report.as_ref(), StrategyKind::Passthrough), 3_778);
    bencher.bench(|| run(&recordings, strategies.clone(), None));
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn all_baselines(bencher: divan::Bencher) {
    let recordings = load();
    let strategies = StrategyKind::ALL.to_vec();
    let report = run(&recordings, strategies.clone(), Some(50_000));
    // The window never overflows, so it replays every call.
    assert_eq!(requests(report.as_ref(), StrategyKind::Window), 3_778);
    bencher.bench(|| run(&recordings, strategies.clone(), Some(50_000)));
}
