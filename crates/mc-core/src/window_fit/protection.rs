//! Protection of the newest tags, bounded by tokens.

/// The newest tags are protected only while together they fit this share of the room: the
/// usable window less the system prompt, tools and head, which no reduction touches. 35%:
/// the middle of the 30–40% range, leaving the rest of the room for older context and the
/// turns until the next bust. Taken of the whole window instead, protection alone was over
/// the force band wherever the fixed prompt is a large share of a small window (a coding
/// agent's 20K at 40K), and every turn busted.
pub const PROTECTED_SHARE_PERCENT: u64 = 35;

/// The token budget of the protected tags for `room` tokens above the fixed prompt.
pub fn protected_budget(room: u64) -> u64 {
    room.saturating_mul(PROTECTED_SHARE_PERCENT) / 100
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
        assert_eq!(protected_budget(12_000), 4_200);
    }
}
