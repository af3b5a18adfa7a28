//! What identifies the answer a client was given, whatever form it sends the answer back in.
//!
//! A splice applies only when the client's message at its anchor is the answer the client
//! got ([`crate::splice`]). Comparing whole content hashes made that depend on details the
//! client is free to change when it stores and resends a message: a Chat tool-call message
//! comes back with `"content": null`, `""`, no `content` key or a list of parts (OpenAI's own
//! streams produce `null`; Pi sends it), an Anthropic text may come back as a string or as a
//! block list, reasoning is kept by some clients and dropped by others, and whitespace at
//! the ends of a text is trimmed by some. Each such change lost the hidden exchange, the
//! history diverged from the stored one and the session forked.
//!
//! The key therefore holds only what the client cannot change without changing the answer
//! itself: the ids and names of the calls it made (the client must echo the ids to give their
//! results) and the words of its text, whitespace aside. Two answers at the same point of the
//! same conversation with the same calls and the same words are the same answer.

use mc_core::{Message, Part};

/// Marks a key of this kind, so it is never mistaken for a stored content hash (the key
/// exchanges were stored under before it, which [`is_answer`] still accepts).
const KEY_PREFIX: &str = "answer-v1:";

/// The key of an answer in the neutral model.
pub fn answer_key(message: &Message) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"mc-answer-v1\0");
    hasher.update(message.role.as_str().as_bytes());
    hasher.update(b"\0");
    let mut char_buf = [0_u8; 4];
    for part in &message.parts {
        if let Part::Text { text, .. } = part {
            for word_char in text.chars().filter(|c| !c.is_whitespace()) {
                hasher.update(word_char.encode_utf8(&mut char_buf).as_bytes());
            }
        }
    }
    for part in &message.parts {
        if let Part::ToolCall { id, name, .. } = part {
            hasher.update(b"\0call\0");
            hasher.update(id.as_bytes());
            hasher.update(b"\0");
            hasher.update(name.as_bytes());
        }
    }
    format!("{KEY_PREFIX}{}", hasher.finalize().to_hex())
}

/// Whether `stored` is a key (else a content hash from before keys).
pub fn is_key(stored: &str) -> bool {
    stored.starts_with(KEY_PREFIX)
}

/// Whether `message` is the answer `stored` names: by its key, or, for an exchange stored
/// before keys existed, by its exact content hash.
pub fn is_answer(stored: &str, message: &Message) -> bool {
    if is_key(stored) {
        stored == answer_key(message)
    } else {
        stored == message.content_hash().to_string()
    }
}

#[cfg(test)]
mod tests {
    use mc_core::{Part, Role};
    use serde_json::json;

    use super::*;

    fn answer(parts: Vec<Part>) -> Message {
        Message::new(Role::Assistant, parts)
    }

    fn call(id: &str) -> Part {
        Part::ToolCall {
            id: id.to_owned(),
            name: "bash".to_owned(),
            input: json!({"command": "ls"}),
        }
    }

    /// Empty, absent, split or trimmed text and dropped reasoning keep the key; other words,
    /// another call or another call id change it.
    #[test]
    fn the_key_sees_the_calls_and_the_words_only() {
        let given = answer(vec![Part::text("Listing it.\n"), call("c1")]);
        let key = answer_key(&given);
        let same = [
            answer(vec![Part::text("Listing"), Part::text(" it."), call("c1")]),
            answer(vec![
                Part::Thinking {
                    text: "hmm".to_owned(),
                    signature: None,
                },
                Part::text("Listing it."),
                call("c1"),
            ]),
        ];
        for form in &same {
            assert_eq!(answer_key(form), key, "{form:?}");
        }
        let calls_only = answer_key(&answer(vec![call("c1")]));
        assert_eq!(
            answer_key(&answer(vec![Part::text(""), call("c1")])),
            calls_only
        );
        let different = [
            answer(vec![Part::text("Listing that."), call("c1")]),
            answer(vec![Part::text("Listing it."), call("c2")]),
            answer(vec![Part::text("Listing it."), call("c1"), call("c2")]),
            answer(vec![Part::text("Listing it.")]),
        ];
        for form in &different {
            assert_ne!(answer_key(form), key, "{form:?}");
        }
    }

    /// An exchange stored under a content hash (before keys) still matches that exact answer
    /// and no other form; one stored under a key matches every form of it.
    #[test]
    fn old_content_hashes_still_match_exactly() {
        let given = answer(vec![Part::text("Tabs.")]);
        let old = given.content_hash().to_string();
        assert!(is_answer(&old, &given));
        assert!(!is_answer(&old, &answer(vec![Part::text("Tabs. ")])));
        let key = answer_key(&given);
        assert!(is_answer(&key, &answer(vec![Part::text("Tabs. ")])));
        assert!(!is_answer(&key, &answer(vec![Part::text("Spaces.")])));
    }
}
