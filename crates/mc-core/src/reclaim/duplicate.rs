//! Duplicate tool output: the same (or nearly the same) output seen again later.
//!
//! The newest copy stays, because it is the one that reflects the current state (a re-run
//! test, a re-listed directory); older copies go. An older copy only goes when the newer copy
//! it duplicates is itself still shown: a copy that was dropped does not stand in for anything.

use std::collections::{BTreeMap, BTreeSet};

use super::ReclaimConfig;
use super::units::Unit;
use crate::tags::TagNo;

/// Tags of older copies of tool output that a newer, still visible copy duplicates, exactly
/// (same whitespace-normalised text) or nearly (shingle Jaccard at or above the threshold,
/// both parts at least `near_duplicate_min_tokens`).
pub(super) fn duplicate_output(units: &[Unit<'_>], config: &ReclaimConfig) -> Vec<TagNo> {
    let mut exact: BTreeSet<[u8; 32]> = BTreeSet::new();
    // Kept copies large enough to compare, bucketed by shingle count so only copies of a
    // compatible size are compared: Jaccard ≥ p needs min/max shingle counts ≥ p.
    let mut near: BTreeMap<usize, Vec<Vec<u64>>> = BTreeMap::new();
    let mut dropped = Vec::new();
    // Newest first: every copy compared against is newer than the one being judged.
    for unit in units
        .iter()
        .rev()
        .filter(|unit| unit.is_output && unit.is_visible)
    {
        let Some(text) = unit.text() else {
            continue;
        };
        let normalised = normalise(&text);
        let hash = *blake3::hash(normalised.as_bytes()).as_bytes();
        let is_large = unit.size_tokens >= config.near_duplicate_min_tokens;
        let shingles = if is_large {
            shingles(&normalised, config.shingle_words)
        } else {
            Vec::new()
        };
        let duplicated = exact.contains(&hash)
            || (!shingles.is_empty()
                && has_near_copy(&near, &shingles, config.near_duplicate_percent));
        if duplicated && unit.is_reclaimable_output() {
            dropped.push(unit.tag);
            continue;
        }
        exact.insert(hash);
        if !shingles.is_empty() {
            near.entry(shingles.len()).or_default().push(shingles);
        }
    }
    dropped.reverse();
    dropped
}

/// Whether any kept copy (sorted shingle hashes, bucketed by count) is at least `percent` similar to `shingles`.
fn has_near_copy(near: &BTreeMap<usize, Vec<Vec<u64>>>, shingles: &[u64], percent: u8) -> bool {
    let percent = usize::from(percent.clamp(1, 100));
    let count = shingles.len();
    // Sizes that can reach the threshold: percent·max ≤ 100·min.
    let low = (count * percent).div_ceil(100);
    let high = count.saturating_mul(100) / percent;
    near.range(low..=high)
        .flat_map(|(_, kept)| kept)
        .any(|kept| {
            let shared = intersection_len(shingles, kept);
            let union = count + kept.len() - shared;
            shared * 100 >= percent * union
        })
}

/// Collapses every whitespace run to one space and trims, so re-indented or re-wrapped output
/// with the same words counts as the same output.
fn normalise(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Hashes of the text's word `width`-grams, sorted and deduplicated. Empty when the text has
/// fewer words than one shingle.
fn shingles(normalised: &str, width: u32) -> Vec<u64> {
    let words: Vec<&str> = normalised.split(' ').collect();
    let width = usize::try_from(width.max(1)).unwrap_or(1);
    let mut hashes: Vec<u64> = words
        .windows(width)
        .map(|window| {
            // FNV-1a: fixed, portable and cheap; shingle hashes need spread, not security.
            let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
            for word in window {
                for byte in word.bytes().chain([0]) {
                    hash ^= u64::from(byte);
                    hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
                }
            }
            hash
        })
        .collect();
    hashes.sort_unstable();
    hashes.dedup();
    hashes
}

/// Size of the intersection of two sorted, deduplicated lists.
fn intersection_len(a: &[u64], b: &[u64]) -> usize {
    let (mut i, mut j, mut shared) = (0, 0, 0);
    while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
        match x.cmp(y) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    shared
}
