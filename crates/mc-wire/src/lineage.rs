//! Which remembered body a follow-up was decoded against, and how many of its first bytes
//! the two share.
//!
//! The incremental decode compares a follow-up with the remembered body byte for byte; a
//! pass's render then asks again, message by message, whether the client's messages are
//! those of the body its previous render paired them with, and compared the whole
//! conversation a second time on every call. A body's lineage carries the first answer to
//! the second question. Ids are never reused (a counter, not an address), so a lineage
//! can only name the very body it was decoded against.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::chunked_body::ChunkedBody;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A decoded body's identity, and the body it repeats the start of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lineage {
    id: u64,
    /// The id of the body it was decoded against, and how many of its first bytes are
    /// that body's.
    parent: Option<(u64, usize)>,
}

impl Lineage {
    /// A body decoded whole.
    pub fn whole() -> Self {
        Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            parent: None,
        }
    }

    /// A body whose first `shared` bytes are those of the body of `parent`.
    pub fn follows(parent: &Self, shared: usize) -> Self {
        Self {
            parent: Some((parent.id, shared)),
            ..Self::whole()
        }
    }

    /// Whether `range` of this lineage's body is known, without a compare, to hold the
    /// bytes of `their_range` in `their`s, and every byte before it too: theirs is the body
    /// this one repeats the start of, and both are the same place in the shared bytes.
    pub fn knows_same(
        &self,
        range: &Range<usize>,
        their: &Self,
        their_range: &Range<usize>,
    ) -> bool {
        range == their_range
            && self
                .parent
                .is_some_and(|(parent, shared)| parent == their.id && range.end <= shared)
    }

    /// Whether `ours[range]` (in this lineage's body) holds the bytes of
    /// `theirs[their_range]` (in `their`s): without a compare when [`Self::knows_same`].
    pub fn same_bytes(
        &self,
        ours: &ChunkedBody,
        range: Range<usize>,
        their: &Self,
        theirs: &ChunkedBody,
        their_range: Range<usize>,
    ) -> bool {
        self.knows_same(&range, their, &their_range) || ours.range_eq(range, theirs, their_range)
    }
}

/// A decoded body's list as the render compares it: the body, where each entry lies, and
/// the body's lineage.
pub struct LocatedList<'a> {
    /// The body.
    pub body: &'a ChunkedBody,
    /// Where each entry of the list lies in it.
    pub ranges: &'a [Range<usize>],
    /// The body's lineage.
    pub lineage: &'a Lineage,
}

impl LocatedList<'_> {
    /// Whether entry `index` and every byte before it are known, without a compare, to be
    /// `other`'s entry `other_index` and the bytes before it ([`Lineage::knows_same`]).
    pub fn knows_same_entry(
        &self,
        index: usize,
        other: &LocatedList<'_>,
        other_index: usize,
    ) -> bool {
        match (self.ranges.get(index), other.ranges.get(other_index)) {
            (Some(ours), Some(theirs)) => self.lineage.knows_same(ours, other.lineage, theirs),
            _ => false,
        }
    }

    /// Whether entry `index` holds the bytes of `other`'s entry `other_index`; `false` when
    /// either list has no such entry.
    pub fn same_entry(&self, index: usize, other: &LocatedList<'_>, other_index: usize) -> bool {
        match (self.ranges.get(index), other.ranges.get(other_index)) {
            (Some(ours), Some(theirs)) => self.lineage.same_bytes(
                self.body,
                ours.clone(),
                other.lineage,
                other.body,
                theirs.clone(),
            ),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(bytes: &[u8]) -> ChunkedBody {
        ChunkedBody::from(bytes.to_vec())
    }

    #[test]
    fn a_shared_place_is_known_and_anything_else_is_compared() {
        let parent = Lineage::whole();
        let child = Lineage::follows(&parent, 4);
        let (ours, theirs) = (&one(b"abcdXY"), &one(b"abcdZW"));
        // The shared bytes at the same place: known.
        assert!(child.same_bytes(ours, 1..3, &parent, theirs, 1..3));
        // Past the shared bytes: compared, and they differ.
        assert!(!child.same_bytes(ours, 3..5, &parent, theirs, 3..5));
        // Another place: compared.
        assert!(!child.same_bytes(ours, 0..2, &parent, theirs, 1..3));
        assert!(child.same_bytes(ours, 0..1, &parent, &one(b"xa"), 1..2));
        // Another body with the same bytes: compared, and equal.
        let stranger = Lineage::whole();
        assert!(child.same_bytes(ours, 0..3, &stranger, &one(b"abc"), 0..3));
        assert!(!child.same_bytes(ours, 0..3, &stranger, &one(b"abd"), 0..3));
    }
}
