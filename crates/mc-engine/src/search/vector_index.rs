//! The semantic signal over stored vectors: an in-memory copy of one model's vectors,
//! brought up to date by reading the rows stored since the last look.
//!
//! A query compares its vector with every vector in scope (a dot product of unit vectors),
//! which at 384 dimensions is a few milliseconds per hundred thousand items, without an
//! approximate index to build or keep in step. Rows are only ever added or replaced with a
//! larger id, so a refresh reads past the largest id it has seen.

use std::collections::HashMap;

use mc_core::search::{Candidate, Signal, Source};
use mc_core::{ContentHash, SessionId};
use mc_store::{SearchScope, Store, VectorPlace, VectorSource};

use super::centre::Centred;
use super::{Found, ItemKey, MessagePlace};

/// Rows read per statement while refreshing.
const REFRESH_BATCH: usize = 5_000;

/// One model's vectors, kept in memory.
#[derive(Debug, Clone)]
pub struct VectorIndex {
    model: String,
    seen_through: i64,
    entries: Vec<Entry>,
    by_item: HashMap<(VectorSource, String), usize>,
}

#[derive(Debug, Clone)]
struct Entry {
    source: VectorSource,
    item: String,
    vector: Vec<f32>,
    place: VectorPlace,
}

impl VectorIndex {
    /// An empty index of `model`'s vectors (the identity stored beside each).
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            seen_through: 0,
            entries: Vec::new(),
            by_item: HashMap::new(),
        }
    }

    /// How many vectors it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Reads the vectors stored since the last refresh; returns how many were read.
    pub fn refresh(&mut self, store: &Store) -> mc_store::Result<usize> {
        let mut read = 0;
        loop {
            let rows =
                store.read(|tx| tx.vectors_since(&self.model, self.seen_through, REFRESH_BATCH))?;
            let Some(last) = rows.last() else {
                return Ok(read);
            };
            self.seen_through = last.id;
            read += rows.len();
            for row in rows {
                // A blob that does not decode is left out, as an item without a vector.
                let Ok(vector) = mc_embed::from_blob(&row.vector) else {
                    continue;
                };
                let entry = Entry {
                    source: row.source,
                    item: row.item,
                    vector,
                    place: row.place,
                };
                let key = (entry.source, entry.item.clone());
                match self.by_item.get(&key) {
                    Some(&index) => self.entries[index] = entry,
                    None => {
                        self.by_item.insert(key, self.entries.len());
                        self.entries.push(entry);
                    }
                }
            }
        }
    }

    /// The `per_source` items of each source nearest `query` within `scope`, each scored by
    /// cosine similarity seen from the mean of the vectors in scope ([`Centred`]; from the
    /// origin when the scope holds few); items with none (at most 0) are not candidates.
    /// Memories are only searched within the scope's project.
    pub fn nearest(&self, query: &[f32], scope: &SearchScope, per_source: usize) -> Found {
        let in_scope: Vec<usize> = (0..self.entries.len())
            .filter(|&index| in_scope(&self.entries[index], scope))
            .collect();
        let centred = Centred::new(
            query,
            in_scope
                .iter()
                .map(|&index| self.entries[index].vector.as_slice()),
        );
        let mut scored: HashMap<VectorSource, Vec<(f32, usize)>> = HashMap::new();
        for index in in_scope {
            let entry = &self.entries[index];
            // Vectors of another width are another model's; no similarity means unrelated.
            let similarity = match &centred {
                Some(centred) => centred.similarity(&entry.vector),
                None => mc_embed::cosine(query, &entry.vector),
            };
            let Some(similarity) = similarity else {
                continue;
            };
            if similarity <= 0.0 {
                continue;
            }
            scored
                .entry(entry.source)
                .or_default()
                .push((similarity, index));
        }
        let mut found = Found::default();
        for (_, mut hits) in scored {
            hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            hits.truncate(per_source);
            for (similarity, index) in hits {
                let entry = &self.entries[index];
                if let Some(candidate) = candidate(entry, f64::from(similarity), &mut found) {
                    found.candidates.push(candidate);
                }
            }
        }
        found
    }
}

fn in_scope(entry: &Entry, scope: &SearchScope) -> bool {
    let project_ok = match (&scope.project, &entry.place.project) {
        (Some(wanted), Some(project)) => wanted.as_str() == project,
        (Some(_), None) => false,
        (None, _) => entry.source != VectorSource::Memory,
    };
    let session_ok = match &scope.session {
        Some(wanted) => {
            entry.source == VectorSource::Memory
                || entry.place.session.as_deref() == Some(wanted.as_str())
        }
        None => true,
    };
    let at = entry.place.at_ms;
    project_ok
        && session_ok
        && scope.since_ms.is_none_or(|since| at >= since)
        && scope.until_ms.is_none_or(|until| at < until)
}

fn candidate(entry: &Entry, score: f64, found: &mut Found) -> Option<Candidate<ItemKey>> {
    let (key, source) = match entry.source {
        VectorSource::Message => {
            let hash = <[u8; 32]>::try_from(entry.place.hash.as_deref()?).ok()?;
            let hash = ContentHash::from_bytes(hash);
            found.places.entry(hash).or_insert(MessagePlace {
                session: SessionId::new(entry.place.session.clone()?).ok()?,
                ordinal: entry.place.ordinal?,
                created_ms: entry.place.at_ms,
            });
            (ItemKey::Message(hash), Source::Message)
        }
        VectorSource::Memory => (ItemKey::Memory(entry.item.parse().ok()?), Source::Memory),
        VectorSource::Compartment => (
            ItemKey::Compartment(
                SessionId::new(entry.place.session.clone()?).ok()?,
                entry.place.ordinal?,
            ),
            Source::Compartment,
        ),
    };
    Some(Candidate {
        key,
        source,
        signal: Signal::Semantic,
        score,
    })
}
