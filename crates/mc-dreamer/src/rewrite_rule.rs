//! When a shorter text may replace a memory: the rule every rewrite passes before it is
//! written.
//!
//! A model asked to be terse may drop the very thing the memory was kept for: the path, the
//! constant, the value. A rewrite is therefore used only when it is non-empty, shorter than
//! the original (in characters), and still names every path, code name and stated value the
//! original names ([`mentions_of`], the extraction `verify_memories` searches with) and
//! every number it writes. Anything else leaves the memory as it was.

use std::fmt;

use mc_core::dreamer::{Mention, mentions_of};

/// Why a rewrite was not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The rewrite is empty.
    Empty,
    /// The rewrite is not shorter.
    NotShorter {
        /// The original's length, characters.
        original_chars: usize,
        /// The rewrite's length, characters.
        rewrite_chars: usize,
    },
    /// The rewrite no longer names something the original does.
    Drops(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("the rewrite is empty"),
            Self::NotShorter {
                original_chars,
                rewrite_chars,
            } => write!(
                f,
                "the rewrite is not shorter ({rewrite_chars} characters, not under {original_chars})"
            ),
            Self::Drops(what) => write!(f, "the rewrite drops {what}"),
        }
    }
}

/// Whether `rewrite` may replace `original`; the reason when it may not.
pub fn check_rewrite(original: &str, rewrite: &str) -> Result<(), Refusal> {
    let rewrite = rewrite.trim();
    if rewrite.is_empty() {
        return Err(Refusal::Empty);
    }
    let (original_chars, rewrite_chars) = (original.chars().count(), rewrite.chars().count());
    if rewrite_chars >= original_chars {
        return Err(Refusal::NotShorter {
            original_chars,
            rewrite_chars,
        });
    }
    let kept = mentions_of(rewrite);
    if let Some(lost) = mentions_of(original)
        .into_iter()
        .find(|mention| !kept.contains(mention))
    {
        return Err(Refusal::Drops(describe(&lost)));
    }
    let kept_numbers = numbers_of(rewrite);
    if let Some(lost) = numbers_of(original)
        .into_iter()
        .find(|number| !kept_numbers.contains(number))
    {
        return Err(Refusal::Drops(format!("the number {lost}")));
    }
    Ok(())
}

fn describe(mention: &Mention) -> String {
    match mention {
        Mention::Path(path) => format!("the path `{path}`"),
        Mention::Name(name) => format!("the name `{name}`"),
        Mention::Value { name, value } => format!("the value `{name}` = {value}"),
    }
}

/// The numbers `text` writes: runs of digits, with a decimal point inside (`1.5`), wherever
/// they stand (`30s`, `v2`, `port=4141`), so a rewrite cannot quietly lose one.
fn numbers_of(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut numbers: Vec<String> = Vec::new();
    let mut current = String::new();
    for (at, &c) in chars.iter().enumerate() {
        let inner_point =
            c == '.' && !current.is_empty() && chars.get(at + 1).is_some_and(char::is_ascii_digit);
        if c.is_ascii_digit() || inner_point {
            current.push(c);
        } else if !current.is_empty() {
            numbers.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        numbers.push(current);
    }
    numbers.dedup();
    numbers
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const ORIGINAL: &str = "The retry limit, which is basically MAX_RETRIES = 5, lives in \
                            src/net.rs and applies to every call for 30s.";

    #[test]
    fn a_shorter_rewrite_keeping_every_identifier_is_accepted() {
        assert_eq!(
            check_rewrite(
                ORIGINAL,
                "Retry limit MAX_RETRIES = 5 in src/net.rs, per call, 30s."
            ),
            Ok(())
        );
    }

    #[test]
    fn a_rewrite_dropping_a_path_a_name_a_value_or_a_number_is_refused() {
        for (rewrite, dropped) in [
            (
                "Retry limit MAX_RETRIES = 5, per call, 30s.",
                "the rewrite drops the path `src/net.rs`",
            ),
            (
                "Retries capped at 5 in src/net.rs, 30s.",
                "the rewrite drops the name `MAX_RETRIES`",
            ),
            (
                "MAX_RETRIES = 7 in src/net.rs; 5 tries, 30s.",
                "the rewrite drops the value `MAX_RETRIES` = 5",
            ),
            (
                "Retry limit MAX_RETRIES = 5 in src/net.rs, per call.",
                "the rewrite drops the number 30",
            ),
        ] {
            let refusal = check_rewrite(ORIGINAL, rewrite).unwrap_err();
            assert_eq!(refusal.to_string(), dropped, "{rewrite}");
        }
    }

    #[test]
    fn an_empty_or_longer_rewrite_is_refused() {
        assert_eq!(check_rewrite(ORIGINAL, "  "), Err(Refusal::Empty));
        let longer = format!("{ORIGINAL} Really.");
        assert_eq!(
            check_rewrite(ORIGINAL, &longer).unwrap_err().to_string(),
            "the rewrite is not shorter (115 characters, not under 107)"
        );
        assert!(matches!(
            check_rewrite("abc", "abc"),
            Err(Refusal::NotShorter { .. })
        ));
    }

    #[test]
    fn numbers_are_digit_runs_with_inner_points() {
        assert_eq!(
            numbers_of("v1.2 took 30s, port=4141. Then 5."),
            ["1.2", "30", "4141", "5"]
        );
    }

    /// Words a memory is made of: filler, identifiers of each kind, and numbers.
    const WORDS: &[&str] = &[
        "the",
        "which",
        "basically",
        "lives",
        "in",
        "is",
        "=",
        "retry",
        "MAX_RETRIES",
        "src/net.rs",
        "parseConfig",
        "Cargo.toml",
        "`Config::load`",
        "5",
        "4141",
        "1.5",
    ];

    /// The words of `WORDS` that a reader would call identifiers or numbers.
    fn is_identifier(word: &str) -> bool {
        word.chars()
            .any(|c| c.is_ascii_digit() || "_/.:".contains(c))
            || word.chars().any(|c| c.is_ascii_uppercase())
    }

    proptest! {
        #[test]
        fn an_accepted_rewrite_never_loses_an_identifier_of_the_original(
            words in prop::collection::vec(prop::sample::select(WORDS), 1..24),
            kept in prop::collection::vec(any::<bool>(), 24),
            shuffled in any::<bool>(),
        ) {
            let original = words.join(" ");
            let mut rewrite: Vec<&str> = words
                .iter()
                .zip(&kept)
                .filter(|(_, keep)| **keep)
                .map(|(word, _)| *word)
                .collect();
            if shuffled {
                rewrite.reverse();
            }
            let rewrite = rewrite.join(" ");
            if check_rewrite(&original, &rewrite).is_ok() {
                let rewrite_words: Vec<&str> = rewrite.split(' ').collect();
                for word in words.iter().filter(|word| is_identifier(word)) {
                    prop_assert!(
                        rewrite_words.contains(word),
                        "{original:?} -> {rewrite:?} lost {word}"
                    );
                }
            }
        }
    }
}
