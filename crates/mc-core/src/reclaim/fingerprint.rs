//! What the content lanes need to know about one unit's content, computed once per unit.
//!
//! Normalising, hashing and shingling every tool output was most of a reclaim pass, and it
//! was repeated on every pass for content that never changes (the raw log is append-only and
//! a tag always names the same unit). A fingerprint depends only on the part's content and
//! the shingle width, so computing it once and reusing it gives the same decisions as
//! computing it again.

use std::cmp::Ordering;

use super::errored::{is_error_text, returncode_envelope};
use crate::Part;

/// The content facts of one tagged unit the lanes compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Fingerprint {
    /// blake3 of the whitespace-normalised text; `None` when the unit carries media or other
    /// non-text content (content lanes compare text only; media is left alone rather than
    /// guessed at).
    pub exact: Option<[u8; 32]>,
    /// Hashes of the normalised text's word shingles, sorted and deduplicated; empty without
    /// text or with fewer words than one shingle.
    pub shingles: Box<[u64]>,
    /// The text reports a failure ([`is_error_text`]).
    pub reports_error: bool,
    /// The text does not contradict success: no error marker, and a text-protocol
    /// `<returncode>` (when present) of 0. True without text.
    pub reports_success: bool,
}

impl Fingerprint {
    /// The fingerprint of `part`, with shingles of `shingle_words` words.
    pub fn of(part: &Part, shingle_words: u32) -> Self {
        let Some(text) = text_of(part) else {
            return Self {
                exact: None,
                shingles: Box::default(),
                reports_error: false,
                reports_success: true,
            };
        };
        let normalised = normalise(&text);
        let reports_error = is_error_text(&text);
        Self {
            exact: Some(*blake3::hash(normalised.as_bytes()).as_bytes()),
            shingles: shingles(&normalised, shingle_words).into_boxed_slice(),
            reports_error,
            reports_success: !reports_error
                && returncode_envelope(&text).is_none_or(|(code, _)| code == "0"),
        }
    }

    /// Whether the two shingle sets are at least `percent` similar (Jaccard). Sets whose
    /// sizes alone rule that out are not compared, so callers may ask about any pair.
    pub fn is_near(&self, other: &Self, percent: u8) -> bool {
        let (a, b) = (self.shingles.len(), other.shingles.len());
        if a == 0 || b == 0 || !sizes_can_match(a, b, percent) {
            return false;
        }
        let percent = usize::from(percent.clamp(1, 100));
        let shared = intersection_len(&self.shingles, &other.shingles);
        shared * 100 >= percent * (a + b - shared)
    }
}

/// Jaccard at least `percent` needs `percent · max ≤ 100 · min` of the set sizes.
pub(super) fn sizes_can_match(a: usize, b: usize, percent: u8) -> bool {
    let percent = usize::from(percent.clamp(1, 100));
    a.min(b) * 100 >= a.max(b) * percent
}

/// The shingle counts a set of `count` shingles can be `percent` similar to, inclusive.
pub(super) fn matching_sizes(count: usize, percent: u8) -> (usize, usize) {
    let percent = usize::from(percent.clamp(1, 100));
    (
        (count * percent).div_ceil(100),
        count.saturating_mul(100) / percent,
    )
}

/// The unit's whole text, or `None` when it carries media or other non-text content.
fn text_of(part: &Part) -> Option<String> {
    match part {
        Part::Text { text, .. } => Some(text.clone()),
        Part::ToolResult { content, .. } => {
            let mut texts = Vec::with_capacity(content.len());
            for part in content {
                match part {
                    Part::Text { text, .. } => texts.push(text.as_str()),
                    _ => return None,
                }
            }
            Some(texts.join("\n"))
        }
        _ => None,
    }
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
            Ordering::Less => i += 1,
            Ordering::Greater => j += 1,
            Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    shared
}
