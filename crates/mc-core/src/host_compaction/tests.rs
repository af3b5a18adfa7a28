use super::*;

#[test]
fn threshold_follows_claude_code() {
    assert_eq!(autocompact_threshold_tokens(200_000, 64_000), 167_000);
    assert_eq!(autocompact_threshold_tokens(200_000, 8_000), 179_000);
    assert_eq!(autocompact_threshold_tokens(50_000, 64_000), 17_000);
    assert_eq!(autocompact_threshold_tokens(20_000, 64_000), 0);
}

#[test]
fn the_trigger_is_degenerate_under_half_the_window() {
    // window − 33K < window / 2 below a 66K window (20K reserve).
    let cases = [
        (200_000, false),
        (100_000, false),
        (66_000, false),
        (65_999, true),
        (64_000, true),
        (50_000, true),
        (20_000, true),
    ];
    let found: Vec<(u64, bool)> = cases
        .iter()
        .map(|&(window, _)| (window, is_degenerate_trigger(window, 64_000)))
        .collect();
    assert_eq!(found, cases);
    // A model with a small output limit reserves less and degenerates lower.
    assert!(is_degenerate_trigger(60_000, 64_000));
    assert!(!is_degenerate_trigger(60_000, 8_192));
}
