//! How much two memories say in the same words: the deterministic half of finding
//! near-duplicates when no embedding model is configured.
//!
//! Each text becomes a set of content words (lower-cased, a plural or past-tense ending
//! taken off, common function words dropped), and two texts are compared by the share of
//! words they have in common (Jaccard). Identifiers and numbers are words too, so two
//! memories stating different values of one setting share most words but not all.

use std::collections::BTreeSet;

/// Function words that say nothing about what a memory is about.
const STOP_WORDS: &[&str] = &[
    "a", "all", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "in",
    "is", "it", "its", "must", "not", "of", "on", "or", "should", "that", "the", "their", "them",
    "there", "these", "this", "to", "use", "used", "uses", "was", "we", "were", "when", "which",
    "with", "always", "never", "every", "each", "any", "can", "do", "does",
];

/// The content words of `text`.
pub fn word_set(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '.'))
        .map(|word| word.trim_matches(['.', '-']).to_lowercase())
        .filter(|word| !word.is_empty() && !STOP_WORDS.contains(&word.as_str()))
        .map(|word| stem(&word))
        .collect()
}

/// The share of words two sets have in common, 0 to 1 (0 when both are empty).
pub fn overlap(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

/// The words that name a thing exactly: identifiers (with `_`) and anything with a digit
/// (numbers, versions, numbered files). Two memories naming different ones state different
/// facts however many other words they share.
pub fn exact_words(words: &BTreeSet<String>) -> BTreeSet<String> {
    words
        .iter()
        .filter(|word| word.contains('_') || word.chars().any(|c| c.is_ascii_digit()))
        .cloned()
        .collect()
}

/// A word without a plural or past-tense ending, so "crates" meets "crate" and "named"
/// meets "name". Identifiers (with `_` or digits) are kept whole.
fn stem(word: &str) -> String {
    if word.contains('_') || word.chars().any(|c| c.is_ascii_digit()) || word.len() <= 4 {
        return word.to_owned();
    }
    for ending in ["ies", "es", "ed", "s"] {
        if let Some(root) = word.strip_suffix(ending) {
            if ending == "ies" {
                return format!("{root}y");
            }
            if ending == "es" && !root.ends_with(['s', 'x', 'z', 'h']) {
                return format!("{root}e");
            }
            if ending == "ed" && root.ends_with('e') {
                return root.to_owned();
            }
            if ending == "ed" {
                return format!("{root}e");
            }
            return root.to_owned();
        }
    }
    word.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restatements_share_their_content_words() {
        let a = word_set("Crate names start with mc-.");
        let b = word_set("All crates are named with the mc- prefix.");
        assert_eq!(a, ["crate", "mc", "name", "start"].map(String::from).into());
        assert_eq!(overlap(&a, &b), 3.0 / 5.0);
    }

    #[test]
    fn different_values_keep_two_memories_apart() {
        let five = word_set("MAX_RETRIES is 5");
        let seven = word_set("MAX_RETRIES is 7");
        assert_eq!(overlap(&five, &seven), 1.0 / 3.0);
        assert_eq!(
            exact_words(&five),
            ["5", "max_retries"].map(String::from).into()
        );
        assert_eq!(overlap(&word_set(""), &word_set("the")), 0.0);
    }
}
