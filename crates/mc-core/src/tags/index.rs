//! All tag assignments of a session, looked up both ways.

use std::collections::{BTreeMap, BTreeSet};

use super::number::{TagAssignment, TagNo, UnitRef};

/// The session's tags, rebuilt from stored assignments on every pass.
///
/// Lookups are O(log n) both ways so planning stays cheap on long sessions. The index is a
/// bijection: if stored rows ever conflict (one tag on two units, or two tags on one unit),
/// the pair with the smaller tag, then the smaller unit, wins, independent of input order, so
/// the same rows always give the same index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TagIndex {
    /// Sorted by tag, one entry per tag; the rank of a tag is its position here.
    by_tag: Vec<TagAssignment>,
    by_unit: BTreeMap<UnitRef, TagNo>,
}

impl TagIndex {
    /// Builds the index from assignments in any order.
    pub fn new(assignments: impl IntoIterator<Item = TagAssignment>) -> Self {
        let sorted: BTreeSet<TagAssignment> = assignments.into_iter().collect();
        let mut by_tag: Vec<TagAssignment> = Vec::with_capacity(sorted.len());
        let mut by_unit = BTreeMap::new();
        for assignment in sorted {
            let tag_taken = by_tag.last().is_some_and(|last| last.tag == assignment.tag);
            if tag_taken || by_unit.contains_key(&assignment.unit) {
                continue;
            }
            by_unit.insert(assignment.unit, assignment.tag);
            by_tag.push(assignment);
        }
        Self { by_tag, by_unit }
    }

    /// Appends assignments made after the index was built, when they come after the newest
    /// tag on units not tagged yet (what ingest produces); the index then equals
    /// [`TagIndex::new`] over all assignments. Anything else leaves the index unchanged and
    /// returns `false`: the caller rebuilds from every stored row, since rows this index
    /// dropped as conflicts could decide differently with the new ones.
    pub fn try_append(&mut self, assignments: impl IntoIterator<Item = TagAssignment>) -> bool {
        let mut pending: Vec<TagAssignment> = assignments.into_iter().collect();
        pending.sort();
        let appendable = pending.iter().enumerate().all(|(i, assignment)| {
            let after = if i == 0 {
                self.newest()
            } else {
                Some(pending[i - 1].tag)
            };
            after.is_none_or(|after| assignment.tag > after)
                && !self.by_unit.contains_key(&assignment.unit)
                && pending[..i]
                    .iter()
                    .all(|earlier| earlier.unit != assignment.unit)
        });
        if appendable {
            for assignment in pending {
                self.by_unit.insert(assignment.unit, assignment.tag);
                self.by_tag.push(assignment);
            }
        }
        appendable
    }

    /// The tag of a unit, if it has one.
    pub fn tag_of(&self, unit: UnitRef) -> Option<TagNo> {
        self.by_unit.get(&unit).copied()
    }

    /// The unit a tag names, if the tag exists.
    pub fn unit_of(&self, tag: TagNo) -> Option<UnitRef> {
        self.position(tag)
            .ok()
            .and_then(|index| self.by_tag.get(index))
            .map(|assignment| assignment.unit)
    }

    /// The highest tag assigned so far.
    pub fn newest(&self) -> Option<TagNo> {
        self.by_tag.last().map(|assignment| assignment.tag)
    }

    /// The number the next ingested unit gets: one past the newest, or `§1§` for a new
    /// session. Saturates at `u32::MAX` instead of wrapping.
    pub fn next_tag(&self) -> TagNo {
        match self.newest() {
            Some(newest) => newest.next().unwrap_or(newest),
            None => TagNo(1),
        }
    }

    /// Whether `tag` is among the newest `protected_count` tags of the session.
    ///
    /// Counted by assigned tags, not by arithmetic on numbers, so a gap in the stored rows
    /// cannot shrink the protected window. A number above every assigned tag counts as
    /// protected (it would be newer still).
    pub fn is_protected(&self, tag: TagNo, protected_count: u32) -> bool {
        // Tags strictly newer than `tag`.
        let newer = match self.position(tag) {
            Ok(index) => self.by_tag.len().saturating_sub(index + 1),
            Err(index) => self.by_tag.len().saturating_sub(index),
        };
        usize::try_from(protected_count).is_ok_and(|count| newer < count)
    }

    /// How many tags the index holds.
    pub fn len(&self) -> usize {
        self.by_tag.len()
    }

    /// Whether the session has no tags yet.
    pub fn is_empty(&self) -> bool {
        self.by_tag.is_empty()
    }

    /// Every assignment, in tag order.
    pub fn iter(&self) -> impl Iterator<Item = TagAssignment> + '_ {
        self.by_tag.iter().copied()
    }

    /// The newest `count` assignments, newest first.
    pub fn newest_first(&self, count: u32) -> impl Iterator<Item = TagAssignment> + '_ {
        self.by_tag
            .iter()
            .rev()
            .take(usize::try_from(count).unwrap_or(usize::MAX))
            .copied()
    }

    fn position(&self, tag: TagNo) -> Result<usize, usize> {
        self.by_tag
            .binary_search_by(|assignment| assignment.tag.cmp(&tag))
    }
}

impl crate::HeldBytes for TagIndex {
    /// One assignment per tag in the sorted list, and one B-tree entry per unit (with about
    /// 16 bytes of node overhead each, amortised).
    fn held_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.by_tag.capacity() * std::mem::size_of::<TagAssignment>()
            + self.by_unit.len() * (std::mem::size_of::<(UnitRef, TagNo)>() + 16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(tag: u32, ordinal: u64, part: u32) -> TagAssignment {
        TagAssignment {
            tag: TagNo(tag),
            unit: UnitRef { ordinal, part },
        }
    }

    #[test]
    fn looks_up_both_ways() {
        let index = TagIndex::new([at(2, 0, 1), at(1, 0, 0), at(3, 1, 0)]);
        assert_eq!(
            index.tag_of(UnitRef {
                ordinal: 0,
                part: 1
            }),
            Some(TagNo(2))
        );
        assert_eq!(
            index.unit_of(TagNo(3)),
            Some(UnitRef {
                ordinal: 1,
                part: 0
            })
        );
        assert_eq!(index.unit_of(TagNo(4)), None);
        assert_eq!(index.newest(), Some(TagNo(3)));
        assert_eq!(index.next_tag(), TagNo(4));
        assert_eq!(TagIndex::default().next_tag(), TagNo(1));
    }

    proptest::proptest! {
        /// An append that is taken equals building the index from all the assignments; one
        /// that is refused leaves the index as it was.
        #[test]
        fn append_equals_new_over_everything(
            first in proptest::collection::vec((1u32..40, 0u64..10, 0u32..3), 0..20),
            then in proptest::collection::vec((1u32..60, 0u64..14, 0u32..3), 0..20),
        ) {
            let to = |rows: &[(u32, u64, u32)]| -> Vec<TagAssignment> {
                rows.iter().map(|&(tag, ordinal, part)| at(tag, ordinal, part)).collect()
            };
            let (first, then) = (to(&first), to(&then));
            let before = TagIndex::new(first.clone());
            let mut extended = before.clone();
            if extended.try_append(then.clone()) {
                let all = TagIndex::new(first.into_iter().chain(then));
                proptest::prop_assert_eq!(extended, all);
            } else {
                proptest::prop_assert_eq!(extended, before);
            }
        }
    }

    #[test]
    fn ingest_style_assignments_append_and_others_do_not() {
        let mut index = TagIndex::new([at(1, 0, 0), at(2, 1, 0)]);
        assert!(index.try_append([at(4, 2, 1), at(3, 2, 0)]));
        assert_eq!(
            index,
            TagIndex::new([at(1, 0, 0), at(2, 1, 0), at(3, 2, 0), at(4, 2, 1)])
        );
        assert!(!index.try_append([at(2, 5, 0)]), "an old number");
        assert!(!index.try_append([at(9, 0, 0)]), "a tagged unit");
        assert_eq!(index.len(), 4);
    }

    #[test]
    fn conflicts_resolve_the_same_whatever_the_order() {
        let rows = [at(1, 0, 0), at(1, 5, 0), at(2, 0, 0), at(3, 6, 0)];
        let forward = TagIndex::new(rows);
        let backward = TagIndex::new(rows.into_iter().rev());
        assert_eq!(forward, backward);
        assert_eq!(
            forward.unit_of(TagNo(1)),
            Some(UnitRef {
                ordinal: 0,
                part: 0
            })
        );
        assert_eq!(forward.unit_of(TagNo(2)), None);
        assert_eq!(forward.len(), 2);
    }

    #[test]
    fn protection_counts_the_newest_tags() {
        let index = TagIndex::new((1..=10).map(|n| at(n, u64::from(n), 0)));
        assert!(index.is_protected(TagNo(10), 1));
        assert!(!index.is_protected(TagNo(9), 1));
        assert!(index.is_protected(TagNo(8), 3));
        assert!(!index.is_protected(TagNo(7), 3));
        assert!(!index.is_protected(TagNo(10), 0));
        assert!(index.is_protected(TagNo(11), 1));
        assert!(index.is_protected(TagNo(1), 20));
    }
}
