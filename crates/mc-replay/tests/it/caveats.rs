//! What a report says about figures that would otherwise mislead: a degenerate autocompact
//! trigger at small windows, and stand-ins for a system prompt and tools the recording did
//! not keep.

use mc_replay::{ReplayOptions, replay};
use mc_sim::strategy::StrategyKind;

use crate::tiny::tiny_recording;

fn options(window_tokens: u64, strategies: Vec<StrategyKind>) -> ReplayOptions {
    ReplayOptions {
        window_tokens: Some(window_tokens),
        strategies,
        ..ReplayOptions::default()
    }
}

fn warnings(table: &str) -> Vec<&str> {
    table
        .lines()
        .filter(|line| line.starts_with("warning:") || line.starts_with("note:"))
        .collect()
}

#[test]
fn a_degenerate_autocompact_trigger_is_flagged() {
    // Sonnet's trigger is window - 33K: 7K of a 40K window, 167K of 200K.
    let small = replay(
        &[tiny_recording()],
        &options(40_000, vec![StrategyKind::Autocompact]),
    );
    let small = small.unwrap();
    assert!(small.degenerate_baseline);
    assert_eq!(small.to_json()["degenerate_baseline"], true);
    assert_eq!(
        warnings(&small.render_table()),
        [
            "warning: autocompact's trigger (Claude Code's: window - min(max output, 20K) - 13K) \
             is under half the 40,000-token window, so it compacts far more often than Claude \
             Code does; ratios against it flatter the others (compare costs at the model's real \
             window)"
        ]
    );
    let real = replay(
        &[tiny_recording()],
        &options(200_000, vec![StrategyKind::Autocompact]),
    );
    let real = real.unwrap();
    assert!(!real.degenerate_baseline);
    assert_eq!(real.to_json()["degenerate_baseline"], false);
    assert_eq!(warnings(&real.render_table()), Vec::<&str>::new());
    // Without autocompact in the run there is nothing to flag.
    let without = replay(
        &[tiny_recording()],
        &options(40_000, vec![StrategyKind::Window]),
    );
    assert!(!without.unwrap().degenerate_baseline);
}

#[test]
fn stand_ins_are_disclosed_and_padding_joins_the_cached_prefix() {
    let mut recording = tiny_recording();
    recording.stand_ins = vec!["system prompt".into(), "tools".into()];
    let plain = replay(
        std::slice::from_ref(&recording),
        &options(200_000, vec![StrategyKind::Passthrough]),
    )
    .unwrap();
    let stand_in = plain.stand_in.unwrap();
    assert_eq!((stand_in.recordings, stand_in.padded), (1, false));
    let json = plain.to_json();
    assert_eq!(json["stand_in_tokens"], stand_in.tokens);
    assert_eq!(
        json["stand_in_note"],
        format!(
            "1 of 1 recordings keep neither system prompt nor tools (Claude Code session \
             files): stand-ins of about {} tokens replaced them, where Claude Code sends \
             15-20K; pad them with --stand-in-tokens",
            stand_in.tokens
        )
    );
    assert!(
        warnings(&plain.render_table())
            .iter()
            .any(|line| line.starts_with("note: 1 of 1 recordings keep neither"))
    );

    let padded_options = ReplayOptions {
        stand_in_tokens: Some(15_000),
        ..options(200_000, vec![StrategyKind::Passthrough])
    };
    let padded = replay(std::slice::from_ref(&recording), &padded_options).unwrap();
    let stand_in = padded.stand_in.unwrap();
    assert!(stand_in.padded);
    assert!((15_000..15_050).contains(&stand_in.tokens), "{stand_in:?}");
    // The padding is read from the cache from the second request on, like a real prompt:
    // every later read is larger by the padding (the stand-in grew from ~100 tokens); the
    // second request also reads the first one's prefix, which alone was too short to cache.
    let plain_steps = &plain.runs[0].steps;
    let padded_steps = &padded.runs[0].steps;
    assert_eq!(padded_steps[1].cache_read, 15_073);
    for (plain, padded) in plain_steps.iter().zip(padded_steps).skip(2) {
        let grown = padded.cache_read - plain.cache_read;
        assert!(
            (14_850..15_050).contains(&grown),
            "step {}: {grown}",
            padded.step
        );
    }
    // The same target gives the same bytes, so the same figures.
    let again = replay(std::slice::from_ref(&recording), &padded_options).unwrap();
    assert_eq!(again.runs[0].steps, padded.runs[0].steps);

    // A recording with its own prompt is neither padded nor disclosed.
    let own = replay(&[tiny_recording()], &padded_options).unwrap();
    assert_eq!(own.stand_in, None);
    assert!(own.to_json().get("stand_in_tokens").is_none());
    assert_eq!(own.runs[0].steps, plain.runs[0].steps);
}
