//! Replay speed: all shared swe trajectories (54 runs, 3,778 calls) through the baselines at a
//! 50K window on Claude Sonnet 4.5, the run the "under a minute" target is about.
//!
//! Measured: `replay` alone (loading is outside the timing), once with `passthrough` only as
//! the same-run baseline, once with all four baselines; their ratio is what to compare across
//! machines. Run with `cargo bench -p mc-replay` (release profile).

use std::path::{Path, PathBuf};

use mc_replay::{ReplayOptions, replay};
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

fn run(recordings: &[Recording], strategies: Vec<StrategyKind>) -> u64 {
    let options = ReplayOptions {
        model: Some("claude-sonnet-4-5".to_owned()),
        window_tokens: Some(50_000),
        strategies,
        ..ReplayOptions::default()
    };
    let report = replay(divan::black_box(recordings), &options);
    report.map_or(0, |report| {
        report.runs.iter().map(|run| run.totals.requests).sum()
    })
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn passthrough_only(bencher: divan::Bencher) {
    let recordings = load();
    assert_eq!(run(&recordings, vec![StrategyKind::Passthrough]), 3_778);
    bencher.bench(|| run(&recordings, vec![StrategyKind::Passthrough]));
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn all_baselines(bencher: divan::Bencher) {
    let recordings = load();
    assert!(run(&recordings, StrategyKind::ALL.to_vec()) >= 4 * 3_778);
    bencher.bench(|| run(&recordings, StrategyKind::ALL.to_vec()));
}
