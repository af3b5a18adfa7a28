//! Single parts too large for the window, and how many characters an excerpt keeps.

/// A part larger than this share of the usable window is shown as an excerpt from its first
/// appearance, whatever its age. 25%: a part that size leaves room for the fixed prompt,
/// the head and the live tail beside it; anything larger (a 100K-token paste or log) could
/// make a session unsendable on its own.
pub const OVERSIZED_SHARE_PERCENT: u64 = 25;

/// Characters per token assumed when sizing excerpts (o200k averages 3.5–4.5 on code and
/// logs); sizing is approximate by design, the render is exact.
const CHARS_PER_TOKEN: u64 = 4;

/// Whether a part of `tokens` is oversized for `usable_window`.
pub fn oversized(tokens: u64, usable_window: u64) -> bool {
    usable_window > 0
        && tokens.saturating_mul(100) > usable_window.saturating_mul(OVERSIZED_SHARE_PERCENT)
}

/// Characters an excerpt of a protected unit keeps, for `room` tokens above the fixed prompt:
/// twenty excerpts take about a quarter of the room (160 tokens each at a 13K room, 2,000 at
/// 160K), at least [`crate::reduction::MIN_EXCERPT_CHARS`] and at most 16,000 characters.
pub fn excerpt_keep_chars(room: u64) -> u32 {
    clamp_chars(room * CHARS_PER_TOKEN / 80, 16_000)
}

/// Characters an excerpt of an oversized part keeps: about 5% of the usable window, at most
/// 64,000, so the model still sees the head and tail of a huge paste in some detail.
pub fn oversized_keep_chars(usable_window: u64) -> u32 {
    clamp_chars(usable_window * CHARS_PER_TOKEN * 5 / 100, 64_000)
}

fn clamp_chars(chars: u64, max: u64) -> u32 {
    let min = u64::from(crate::reduction::MIN_EXCERPT_CHARS);
    u32::try_from(chars.clamp(min, max)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_scale_with_the_window_within_bounds() {
        assert!(oversized(10_001, 40_000));
        assert!(!oversized(10_000, 40_000));
        assert!(!oversized(10, 0));
        assert_eq!(excerpt_keep_chars(16_000), 800);
        assert_eq!(excerpt_keep_chars(1_000), 400);
        assert_eq!(excerpt_keep_chars(10_000_000), 16_000);
        assert_eq!(oversized_keep_chars(180_000), 36_000);
    }
}
