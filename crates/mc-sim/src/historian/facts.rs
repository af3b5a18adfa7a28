//! The facts a small model lifts from a transcript: the user's own rules, sentences where
//! they say something must always or never happen. Most transcripts give none, as most real
//! chunks do.

use mc_core::historian::FactDraft;

use super::episode::excerpt;

/// Words that make a user's sentence a project rule.
const RULE_WORDS: [&str; 3] = ["always", "never", "must"];
/// The most facts one answer lists.
const MAX_FACTS: usize = 3;
/// Characters of a fact kept.
const FACT_CHARS: usize = 200;

/// `PROJECT_RULES` facts from `user_texts`, in order, without repeats.
pub(crate) fn rules(user_texts: &[&str]) -> Vec<FactDraft> {
    let mut facts: Vec<FactDraft> = Vec::new();
    for sentence in user_texts.iter().flat_map(|text| sentences(text)) {
        if facts.len() == MAX_FACTS {
            break;
        }
        let has_rule_word = sentence
            .split(|character: char| !character.is_alphanumeric())
            .any(|word| {
                RULE_WORDS
                    .iter()
                    .any(|rule| word.eq_ignore_ascii_case(rule))
            });
        let content = excerpt(sentence, FACT_CHARS);
        if has_rule_word && !facts.iter().any(|fact| fact.content == content) {
            facts.push(FactDraft {
                category: "PROJECT_RULES".to_owned(),
                content,
            });
        }
    }
    facts
}

/// The sentences of `text`: cut after `.`, `!` or `?` followed by a space, so a path such as
/// `src/net.rs` stays whole.
pub(crate) fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut begun = 0;
    let mut previous = None;
    for (at, character) in text.char_indices() {
        if character == ' ' && matches!(previous, Some('.' | '!' | '?')) {
            out.push(text.get(begun..at).unwrap_or(""));
            begun = at + 1;
        }
        previous = Some(character);
    }
    out.push(text.get(begun..).unwrap_or(""));
    out.into_iter()
        .map(str::trim)
        .filter(|sentence| !sentence.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_the_users_always_never_and_must_sentences() {
        let facts = rules(&[
            "Fix src/net.rs. Always run cargo fmt before committing! Thanks.",
            "You MUST keep the API. Never mind.",
            "Always run cargo fmt before committing!",
        ]);
        let contents: Vec<&str> = facts.iter().map(|fact| fact.content.as_str()).collect();
        assert_eq!(
            contents,
            [
                "Always run cargo fmt before committing!",
                "You MUST keep the API.",
                "Never mind."
            ]
        );
        assert!(facts.iter().all(|fact| fact.category == "PROJECT_RULES"));
        assert!(rules(&["nevertheless, mustard"]).is_empty());
    }
}
