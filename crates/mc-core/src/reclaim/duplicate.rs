//! Duplicate tool output: the same (or nearly the same) output seen again later.
//!
//! The newest copy stays, because it is the one that reflects the current state (a re-run
//! test, a re-listed directory); older copies go. An older copy only goes when the newer copy
//! it duplicates is itself still shown: a copy that was dropped does not stand in for anything.

use std::collections::BTreeSet;

use super::ReclaimConfig;
use super::index::FingerprintIndex;
use super::units::Unit;
use crate::tags::TagNo;

/// Tags of older copies of tool output that a newer, still visible copy duplicates, exactly
/// (same whitespace-normalised text) or nearly (shingle Jaccard at or above the threshold,
/// both parts at least `near_duplicate_min_tokens`).
///
/// The similarity of each pair was settled when the index first saw the newer unit; here
/// only the walk over what is still shown remains, so a pass costs no text processing.
pub(super) fn duplicate_output(
    units: &[Unit<'_>],
    index: &FingerprintIndex,
    config: &ReclaimConfig,
) -> Vec<TagNo> {
    let mut exact: BTreeSet<&[u8; 32]> = BTreeSet::new();
    // Kept copies large enough for near-duplicate comparison.
    let mut near: BTreeSet<TagNo> = BTreeSet::new();
    let mut dropped = Vec::new();
    // Newest first: every copy compared against is newer than the one being judged.
    for unit in units
        .iter()
        .rev()
        .filter(|unit| unit.is_output && unit.is_visible)
    {
        let Some(print) = index.print(unit.tag) else {
            continue;
        };
        let Some(hash) = &print.exact else {
            continue;
        };
        let is_large =
            unit.size_tokens >= config.near_duplicate_min_tokens && !print.shingles.is_empty();
        let duplicated = exact.contains(hash)
            || (is_large
                && index
                    .near_copies(unit.tag)
                    .iter()
                    .any(|copy| near.contains(copy)));
        if duplicated && unit.is_reclaimable_output() {
            dropped.push(unit.tag);
            continue;
        }
        exact.insert(hash);
        if is_large {
            near.insert(unit.tag);
        }
    }
    dropped.reverse();
    dropped
}
