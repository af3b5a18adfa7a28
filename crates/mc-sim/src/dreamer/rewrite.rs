//! The simulated dreamer shortening verbose memories: from a rewriting call's memories, the
//! `rewrite_memories` input a careful model would write.
//!
//! It drops filler words ("basically", "the", "which") and keeps every other word as
//! written, so every path, name, value and number survives and the words that link a name
//! to its value (`is`, `to`, `=`) stay where they were. A memory with no filler to drop is
//! left out, as the instructions ask: the run then says no shorter text was given.

use mc_core::dreamer::{VerboseMemory, read_rewrite_message};
use serde_json::{Value, json};

/// Words a terse memory does without.
const FILLER: &[&str] = &[
    "a",
    "actually",
    "an",
    "basically",
    "currently",
    "essentially",
    "generally",
    "just",
    "please",
    "quite",
    "really",
    "simply",
    "that",
    "the",
    "very",
    "which",
];

/// The `rewrite_memories` input for the rewriting user message `user_message`, or `None`
/// when the message is not one.
pub fn rewrite_answer(user_message: &str) -> Option<Value> {
    let (_, memories) = read_rewrite_message(user_message)?;
    let rewrites: Vec<Value> = memories.iter().filter_map(shorter).collect();
    Some(json!({ "rewrites": rewrites }))
}

fn shorter(memory: &VerboseMemory) -> Option<Value> {
    let kept: Vec<&str> = memory
        .content
        .split_whitespace()
        .filter(|word| !is_filler(word))
        .collect();
    let content = kept.join(" ");
    (content.len() < memory.content.len() && !content.is_empty())
        .then(|| json!({ "memory_id": memory.memory_id, "content": content }))
}

/// Whether `word` is filler, alone or before a comma; one ending a sentence stays, so the
/// full stop does not go with it.
fn is_filler(word: &str) -> bool {
    let bare = word.strip_suffix(',').unwrap_or(word);
    FILLER.contains(&bare.to_ascii_lowercase().as_str())
}

#[cfg(test)]
mod tests {
    use mc_core::dreamer::{Rewrite, parse_rewrites, rewrite_user_message};

    use super::*;

    fn memory(id: u64, content: &str) -> VerboseMemory {
        VerboseMemory {
            memory_id: id,
            category: "CONFIG_VALUES".into(),
            content: content.into(),
        }
    }

    #[test]
    fn filler_goes_and_identifiers_stay() {
        let message = rewrite_user_message(
            100,
            &[
                memory(
                    3,
                    "The retry limit, which is basically MAX_RETRIES = 5, really lives in src/net.rs.",
                ),
                memory(4, "MAX_RETRIES = 5 in src/net.rs."),
            ],
        );
        let answer = rewrite_answer(&message).unwrap();
        assert_eq!(
            parse_rewrites(&answer, &[3, 4]),
            Ok(vec![Rewrite {
                memory_id: 3,
                content: "retry limit, is MAX_RETRIES = 5, lives in src/net.rs.".into()
            }])
        );
        assert_eq!(rewrite_answer("Memories to check"), None);
    }
}
