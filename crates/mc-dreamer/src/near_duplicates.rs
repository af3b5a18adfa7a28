//! Which memories may say the same thing: groups by word overlap, for the model to merge.
//!
//! Two memories are linked when they share at least [`MIN_OVERLAP`] of their content words
//! and, when both name identifiers or numbers, at least as large a share of those: "handle_3_4
//! lives in …" and "handle_3_5 lives in …" share most words but are two facts. Linked memories
//! form a group (linked through any chain). Pure over the memories' text.

use std::collections::BTreeSet;

use mc_core::dreamer::{MergeGroup, exact_words, overlap, word_set};
use mc_store::StoredMemory;

/// The share of content words two memories must have in common to be shown together.
/// Restatements in other words share about half ("Crate names start with mc-" and "All
/// crates are named with the mc- prefix" share 3 of 5); unrelated facts rarely a quarter.
pub const MIN_OVERLAP: f64 = 0.45;

/// Most memories in one group: a larger cluster is a sign of a vague vocabulary, not of one
/// fact said many times, and would make a long, error-prone answer.
pub const MAX_GROUP: usize = 6;

/// The groups of `memories` (oldest first within a group, groups by their oldest member).
pub fn near_duplicate_groups(memories: &[StoredMemory]) -> Vec<MergeGroup> {
    let words: Vec<(BTreeSet<String>, BTreeSet<String>)> = memories
        .iter()
        .map(|memory| {
            let words = word_set(&memory.record.content);
            let exact = exact_words(&words);
            (words, exact)
        })
        .collect();
    let mut leader: Vec<usize> = (0..memories.len()).collect();
    for a in 0..memories.len() {
        for b in a + 1..memories.len() {
            if is_linked(&words[a], &words[b]) {
                let (root_a, root_b) = (root(&mut leader, a), root(&mut leader, b));
                leader[root_a.max(root_b)] = root_a.min(root_b);
            }
        }
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for index in 0..memories.len() {
        let root = root(&mut leader, index);
        match groups.iter_mut().find(|group| group.first() == Some(&root)) {
            Some(group) => group.push(index),
            None => groups.push(vec![index]),
        }
    }
    groups
        .into_iter()
        .filter(|group| (2..=MAX_GROUP).contains(&group.len()))
        .map(|group| MergeGroup {
            memories: group
                .into_iter()
                .map(|index| {
                    let memory = &memories[index];
                    (
                        memory.id,
                        memory.record.category.as_str().to_owned(),
                        memory.record.content.clone(),
                    )
                })
                .collect(),
        })
        .collect()
}

/// Whether two memories (their words and exact words) may state one fact.
fn is_linked(
    (words_a, exact_a): &(BTreeSet<String>, BTreeSet<String>),
    (words_b, exact_b): &(BTreeSet<String>, BTreeSet<String>),
) -> bool {
    let exact_agree =
        exact_a.is_empty() || exact_b.is_empty() || overlap(exact_a, exact_b) >= MIN_OVERLAP;
    exact_agree && overlap(words_a, words_b) >= MIN_OVERLAP
}

/// The group leader of `index`, shortening the path on the way.
fn root(leader: &mut [usize], index: usize) -> usize {
    let mut at = index;
    while leader[at] != at {
        leader[at] = leader[leader[at]];
        at = leader[at];
    }
    at
}

#[cfg(test)]
mod tests {
    use mc_core::head::MemoryCategory;
    use mc_store::{MemoryRecord, MemorySource, MemoryStatus};

    use super::*;

    fn memory(id: u64, content: &str) -> StoredMemory {
        StoredMemory {
            id,
            record: MemoryRecord {
                category: MemoryCategory::Naming,
                content: content.into(),
                status: MemoryStatus::Active,
                source: MemorySource::Historian,
                seen_count: 1,
                created_ms: 0,
                updated_ms: 0,
            },
            superseded_by: None,
        }
    }

    #[test]
    fn restatements_group_and_unrelated_memories_do_not() {
        let memories = [
            memory(1, "Crate names start with mc-."),
            memory(2, "Tests run with cargo nextest."),
            memory(3, "All crates are named with the mc- prefix."),
            memory(4, "The proxy listens on port 4141."),
            memory(5, "handle_3_4 lives in src/mod_3/file_4.rs"),
            memory(6, "handle_3_5 lives in src/mod_3/file_5.rs"),
            memory(
                7,
                "The function handle_3_4 is defined in src/mod_3/file_4.rs",
            ),
        ];
        let ids: Vec<Vec<u64>> = near_duplicate_groups(&memories)
            .iter()
            .map(|group| group.memories.iter().map(|(id, ..)| *id).collect())
            .collect();
        assert_eq!(ids, [vec![1, 3], vec![5, 7]]);
    }

    #[test]
    fn oversized_clusters_are_left_alone() {
        let memories: Vec<StoredMemory> = (0..8)
            .map(|id| memory(id, "the cache key is built from the prompt"))
            .collect();
        assert!(near_duplicate_groups(&memories).is_empty());
    }
}
