//! `--token-scale`: the provider counts more than the strategies estimate, and only the
//! provider. The strategies must keep estimating unscaled (the engine has to learn the
//! difference from the usage reported back), so a strategy that decides on estimates alone
//! sends the same messages at any scale, and only the reported sizes grow.

use mc_replay::{ReplayOptions, replay};
use mc_sim::TokenScale;
use mc_sim::strategy::StrategyKind;

use crate::tiny::tiny_recording;

fn window_prompts(token_scale: TokenScale, window_tokens: u64) -> Vec<u64> {
    let options = ReplayOptions {
        window_tokens: Some(window_tokens),
        strategies: vec![StrategyKind::Window],
        token_scale,
        ..ReplayOptions::default()
    };
    let report = replay(&[tiny_recording()], &options).unwrap();
    assert_eq!(report.token_scale, token_scale);
    report.runs[0]
        .steps
        .iter()
        .map(|point| point.prompt_tokens)
        .collect()
}

#[test]
fn only_the_provider_counts_at_the_scale() {
    // At 42K the window's budget (22K) holds three of the ~6.5K-token tool results as the
    // strategy estimates them, and would hold only two at 1.25 times that estimate.
    let plain = window_prompts(TokenScale::ONE, 42_000);
    let scaled = window_prompts(TokenScale::new(1.25).unwrap(), 42_000);
    assert_eq!(plain.last(), Some(&20_765));
    assert_eq!(plain.len(), scaled.len());
    for (step, (&plain, &scaled)) in plain.iter().zip(&scaled).enumerate() {
        // The same messages, each block rounded on its own: within a token per block (a
        // prompt here has under 30 blocks). Had the strategy estimated at the scale, it would
        // have kept fewer messages and sent far less.
        let expected = plain as f64 * 1.25;
        assert!(
            (scaled as f64 - expected).abs() <= 30.0,
            "step {step}: {scaled} at 1.25x vs {plain} at 1x"
        );
    }
}

#[test]
fn the_report_shows_the_scale() {
    let options = ReplayOptions {
        window_tokens: Some(40_000),
        strategies: vec![StrategyKind::Passthrough],
        token_scale: TokenScale::new(1.25).unwrap(),
        ..ReplayOptions::default()
    };
    let report = replay(&[tiny_recording()], &options).unwrap();
    assert_eq!(report.to_json()["token_scale"], 1.25);
    let table = report.render_table();
    assert!(
        table.starts_with(
            "1 recordings on claude-sonnet-4-5, window 40000 tokens, provider token scale 1.25x"
        ),
        "{table}"
    );
}
