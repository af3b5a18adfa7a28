//! The simulated dreamer merging near-duplicates: from a consolidating call's groups, the
//! `merge_memories` input a careful model would write.
//!
//! Within a group, a memory is merged into the group's oldest when the two share most of
//! their content words and name exactly the same identifiers and numbers: "MAX_RETRIES is 5"
//! and "MAX_RETRIES is 7" share words but state different facts, so they stay apart. The
//! merged text is the longer of the texts, so nothing either said is lost.

use mc_core::dreamer::{MergeGroup, exact_words, overlap, read_merge_message, word_set};
use serde_json::{Value, json};

/// The share of content words two memories must share for the simulated model to call
/// them one fact (with the same identifiers and numbers).
const SAME_FACT_OVERLAP: f64 = 0.4;

/// The `merge_memories` input for the consolidating user message `user_message`, or `None`
/// when the message is not one.
pub fn merge_answer(user_message: &str) -> Option<Value> {
    let groups = read_merge_message(user_message)?;
    let merges: Vec<Value> = groups.iter().filter_map(merge_of).collect();
    Some(json!({ "merges": merges }))
}

fn merge_of(group: &MergeGroup) -> Option<Value> {
    let (keep, _, anchor) = group.memories.first()?;
    let anchor_words = word_set(anchor);
    let anchor_exact = exact_words(&anchor_words);
    let same: Vec<&(u64, String, String)> = group.memories[1..]
        .iter()
        .filter(|(_, _, text)| {
            let words = word_set(text);
            exact_words(&words) == anchor_exact
                && overlap(&words, &anchor_words) >= SAME_FACT_OVERLAP
        })
        .collect();
    if same.is_empty() {
        return None;
    }
    let longest = same
        .iter()
        .map(|(_, _, text)| text)
        .chain(std::iter::once(anchor))
        .max_by_key(|text| text.len())?;
    let others: Vec<u64> = same.iter().map(|(id, ..)| *id).collect();
    Some(json!({ "keep": keep, "others": others, "content": longest }))
}

#[cfg(test)]
mod tests {
    use mc_core::dreamer::{Merge, merge_user_message, parse_merges};

    use super::*;

    #[test]
    fn restatements_merge_and_different_values_stay_apart() {
        let memory = |id: u64, text: &str| (id, "NAMING".to_owned(), text.to_owned());
        let groups = vec![
            MergeGroup {
                memories: vec![
                    memory(3, "Crate names start with mc-."),
                    memory(9, "All crates are named with the mc- prefix."),
                ],
            },
            MergeGroup {
                memories: vec![memory(4, "MAX_RETRIES is 5"), memory(5, "MAX_RETRIES is 7")],
            },
        ];
        let answer = merge_answer(&merge_user_message(&groups)).unwrap();
        assert_eq!(
            parse_merges(&answer, &groups),
            Ok(vec![Merge {
                keep: 3,
                others: vec![9],
                content: "All crates are named with the mc- prefix.".into()
            }])
        );
        assert_eq!(merge_answer("hello"), None);
    }
}
