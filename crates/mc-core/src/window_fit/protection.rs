//! Protection of the newest tags, bounded by tokens.

/// The newest tags are protected only while together they fit this share of the usable
/// window. 35%: the middle of the 30–40% range where replays at 32K and 64K windows kept the
/// force band from busting every turn, while leaving the model several recent outputs whole
/// at 200K (70K tokens of them).
pub const PROTECTED_SHARE_PERCENT: u64 = 35;

/// The token budget of the protected tags for a usable window.
pub fn protected_budget(usable_window: u64) -> u64 {
    usable_window.saturating_mul(PROTECTED_SHARE_PERCENT) / 100
}

/// How many of the newest tags stay protected in full: at most `count`, newest first, while
/// their sizes (`sizes`, newest first) sum to at most `budget`. A newest tag larger than the
/// budget on its own leaves none protected in full (it is then shown as an excerpt when the
/// window requires, never dropped).
pub fn protected_within(
    sizes_newest_first: impl IntoIterator<Item = u64>,
    count: u32,
    budget: u64,
) -> u32 {
    let mut used = 0_u64;
    let mut kept = 0_u32;
    for size in sizes_newest_first.into_iter().take(count as usize) {
        used = used.saturating_add(size);
        if used > budget {
            break;
        }
        kept += 1;
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protection_stops_at_the_budget() {
        assert_eq!(protected_within([100, 100, 100], 20, 1_000), 3);
        assert_eq!(protected_within([400, 400, 400], 20, 1_000), 2);
        assert_eq!(protected_within([2_000, 1], 20, 1_000), 0);
        assert_eq!(protected_within(vec![1; 30], 20, 1_000), 20);
        assert_eq!(protected_budget(40_000), 14_000);
    }
}
