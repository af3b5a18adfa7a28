//! The fingerprints of a session's tool output and the near-duplicate pairs among them, kept
//! between passes.
//!
//! A pass then fingerprints only the output it has not seen and compares only that output
//! with the rest, so its cost grows with what is new, not with the session. The index holds
//! nothing a pass could not recompute: every entry is a pure function of a unit's content and
//! the config, and a tag always names the same stored unit, so planning with a kept index
//! decides exactly what planning with a fresh one does (a property the tests check).

use std::collections::{BTreeMap, BTreeSet};

use super::ReclaimConfig;
use super::fingerprint::{Fingerprint, matching_sizes};
use super::units::Unit;
use crate::tags::TagNo;

/// Fingerprints of one session's tool output, kept by the caller from pass to pass.
///
/// Build one per session with [`FingerprintIndex::new`] and pass it to every
/// [`plan_reclaim_with`](super::plan_reclaim_with) of that session. Output that landed as
/// dropped keeps only its small facts (its shingles are released), so the index stays the
/// size of what the model still sees. Using it with another config, or another session's
/// units, is safe but costs a rebuild: entries are keyed by tag and checked against the
/// config on every use.
#[derive(Debug, Clone, Default)]
pub struct FingerprintIndex {
    /// The config the entries were computed with: `shingle_words` and the percentage.
    shingle_words: u32,
    near_duplicate_percent: u8,
    prints: BTreeMap<TagNo, Entry>,
    /// Units holding shingles, by shingle count, so a new unit is compared only with units
    /// of a size that could reach the similarity threshold.
    by_count: BTreeSet<(usize, TagNo)>,
    /// Near-duplicate pairs, symmetric: `b` is listed under `a` exactly when `a` is under `b`.
    near: BTreeMap<TagNo, Vec<TagNo>>,
}

/// One unit's fingerprint and whether its shingles were released.
#[derive(Debug, Clone)]
struct Entry {
    print: Fingerprint,
    /// The unit had landed as dropped when last seen: its shingles and pairs are gone.
    is_released: bool,
}

impl FingerprintIndex {
    /// An empty index for `config`.
    pub fn new(config: &ReclaimConfig) -> Self {
        Self {
            shingle_words: config.shingle_words,
            near_duplicate_percent: config.near_duplicate_percent,
            ..Self::default()
        }
    }

    /// How many units are fingerprinted.
    pub fn len(&self) -> usize {
        self.prints.len()
    }

    /// Whether no unit is fingerprinted.
    pub fn is_empty(&self) -> bool {
        self.prints.is_empty()
    }

    /// Brings the index in line with `units`: fingerprints the output units it lacks (and
    /// pairs them with the others), releases the shingles of output that landed, and forgets
    /// units no longer passed (below a moved boundary).
    pub(super) fn update(&mut self, units: &[Unit<'_>], config: &ReclaimConfig) {
        if config.shingle_words != self.shingle_words
            || config.near_duplicate_percent != self.near_duplicate_percent
        {
            *self = Self::new(config);
        }
        let mut outputs = 0;
        for unit in units.iter().filter(|unit| unit.is_output) {
            outputs += 1;
            match self.prints.get(&unit.tag).map(|entry| entry.is_released) {
                Some(false) if unit.is_landed => self.release(unit.tag),
                // Released but shown again: only a caller that un-lands drops does this.
                Some(true) if !unit.is_landed => {
                    self.forget(unit.tag);
                    self.insert(unit);
                }
                Some(_) => {}
                None => self.insert(unit),
            }
        }
        if self.prints.len() != outputs {
            let passed: BTreeSet<TagNo> = units
                .iter()
                .filter(|unit| unit.is_output)
                .map(|unit| unit.tag)
                .collect();
            let gone: Vec<TagNo> = self
                .prints
                .keys()
                .filter(|tag| !passed.contains(tag))
                .copied()
                .collect();
            for tag in gone {
                self.forget(tag);
            }
        }
    }

    /// The fingerprint of `tag`; every output unit passed to the last update has one.
    pub(super) fn print(&self, tag: TagNo) -> Option<&Fingerprint> {
        self.prints.get(&tag).map(|entry| &entry.print)
    }

    /// The units near-duplicating `tag` (shingle Jaccard at or above the threshold), in no
    /// particular order.
    pub(super) fn near_copies(&self, tag: TagNo) -> &[TagNo] {
        self.near.get(&tag).map_or(&[], Vec::as_slice)
    }

    fn insert(&mut self, unit: &Unit<'_>) {
        let print = Fingerprint::of(unit.body, self.shingle_words);
        let count = print.shingles.len();
        if unit.is_landed || count == 0 {
            let is_released = unit.is_landed;
            let print = Fingerprint {
                shingles: Box::default(),
                ..print
            };
            self.prints.insert(unit.tag, Entry { print, is_released });
            return;
        }
        let (low, high) = matching_sizes(count, self.near_duplicate_percent);
        let similar: Vec<TagNo> = self
            .by_count
            .range((low, TagNo(0))..=(high, TagNo(u32::MAX)))
            .map(|&(_, other)| other)
            .filter(|other| {
                self.print(*other)
                    .is_some_and(|kept| print.is_near(kept, self.near_duplicate_percent))
            })
            .collect();
        for &other in &similar {
            self.near.entry(other).or_default().push(unit.tag);
        }
        if !similar.is_empty() {
            self.near.insert(unit.tag, similar);
        }
        self.by_count.insert((count, unit.tag));
        self.prints.insert(
            unit.tag,
            Entry {
                print,
                is_released: false,
            },
        );
    }

    /// Drops the shingles and pairs of a unit that landed; its flags stay (the superseded
    /// lane still asks whether a dropped read succeeded).
    fn release(&mut self, tag: TagNo) {
        self.unpair(tag);
        if let Some(entry) = self.prints.get_mut(&tag) {
            entry.print.shingles = Box::default();
            entry.is_released = true;
        }
    }

    fn forget(&mut self, tag: TagNo) {
        self.unpair(tag);
        self.prints.remove(&tag);
    }

    fn unpair(&mut self, tag: TagNo) {
        if let Some(entry) = self.prints.get(&tag) {
            self.by_count.remove(&(entry.print.shingles.len(), tag));
        }
        for other in self.near.remove(&tag).unwrap_or_default() {
            if let Some(list) = self.near.get_mut(&other) {
                list.retain(|&listed| listed != tag);
                if list.is_empty() {
                    self.near.remove(&other);
                }
            }
        }
    }
}

/// Bytes per entry of a B-tree map or set, beside its key and value: node headers and
/// slack, amortised (nodes hold 6 to 11 entries).
const TREE_ENTRY_OVERHEAD: usize = 16;

impl crate::HeldBytes for FingerprintIndex {
    /// The shingles dominate: eight bytes per word of every indexed tool output.
    fn held_bytes(&self) -> usize {
        let entry = std::mem::size_of::<(TagNo, Entry)>() + TREE_ENTRY_OVERHEAD;
        let prints: usize = self
            .prints
            .values()
            .map(|held| entry + std::mem::size_of_val(&*held.print.shingles))
            .sum();
        let by_count =
            self.by_count.len() * (std::mem::size_of::<(usize, TagNo)>() + TREE_ENTRY_OVERHEAD);
        let near: usize = self
            .near
            .values()
            .map(|pairs| {
                std::mem::size_of::<(TagNo, Vec<TagNo>)>()
                    + TREE_ENTRY_OVERHEAD
                    + pairs.capacity() * std::mem::size_of::<TagNo>()
            })
            .sum();
        std::mem::size_of::<Self>() + prints + by_count + near
    }
}
