//! DESIGN §5: nothing is sent over a known limit. The engine replays generated coding sessions
//! (large tool inputs and outputs, a large fixed prompt) and the shared swe trajectories at
//! 32K and 64K windows, with the simulated provider counting 25% more tokens than the engine
//! estimates: no request goes over the window, no session fails, no pass falls back
//! unmanaged.

use mc_replay::{ReplayOptions, replay};
use mc_sim::TokenScale;
use mc_sim::strategy::StrategyKind;

use crate::coding_sessions::coding_session;
use crate::shared_data;

fn assert_inside(recordings: &[mc_sim::Recording], window_tokens: u64) {
    let options = ReplayOptions {
        window_tokens: Some(window_tokens),
        strategies: vec![StrategyKind::Magic],
        token_scale: TokenScale::new(1.25).unwrap(),
        ..ReplayOptions::default()
    };
    let report = replay(recordings, &options).unwrap();
    let totals = &report.runs[0].totals;
    eprintln!(
        "window {window_tokens}: {} requests, peak {}, over {}, failed {}, read share {:.3}, busts {:?}",
        totals.requests,
        totals.peak_context,
        totals.over_window,
        totals.failed_sessions,
        totals.cache_read_share,
        totals.busts
    );
    assert_eq!(
        totals.over_window, 0,
        "requests over the {window_tokens} window"
    );
    assert_eq!(totals.failed_sessions, 0);
    assert_eq!(totals.engine_failures, Some(0));
    assert!(totals.peak_context <= window_tokens);
}

#[test]
fn generated_coding_sessions_stay_inside_small_windows() {
    let sessions: Vec<_> = (1..=4).map(|seed| coding_session(seed, 60)).collect();
    assert_inside(&sessions, 32_000);
    assert_inside(&sessions, 64_000);
}

#[test]
fn swe_trajectories_stay_inside_small_windows() {
    let recordings = shared_data::load("swe-trajectories");
    assert_inside(&recordings, 32_000);
    assert_inside(&recordings, 64_000);
}
