//! What a user typed, as an FTS5 query that matches their words and nothing else.
//!
//! FTS5 gives meaning to quotes, `NEAR`, `AND`/`OR`/`NOT`, `*`, `^`, `:`, `-`, parentheses and
//! column filters. Passing user text through would turn `fix: don't use -v` into a syntax
//! error or a column filter. Instead the text is split into words (runs of letters and digits,
//! which is also how the `unicode61` tokenizer splits), each word is quoted as an FTS5 string,
//! and the words are joined with `OR`: BM25 then ranks rows matching more (and rarer) words
//! first, which is what a question in natural language needs. Words every row has carry no
//! signal and make an `OR` query scan the whole index, so a short list of English function
//! words is left out unless nothing else remains.

use std::fmt;

/// At most this many distinct words are searched: a pasted stack trace must not become a
/// query that touches every row of the index.
pub const MAX_QUERY_TERMS: usize = 32;

/// Words too common to rank by; dropped from a query that has other words.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "am", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "being", "but", "by", "can", "could", "did", "do", "does", "doing", "for", "from",
    "had", "has", "have", "having", "he", "her", "hers", "him", "his", "how", "i", "if", "in",
    "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "she", "so", "than", "that",
    "the", "their", "them", "then", "there", "these", "they", "this", "those", "to", "was", "we",
    "were", "what", "when", "where", "which", "who", "whom", "why", "will", "with", "would", "you",
    "your",
];

/// A query ready for `MATCH`, and the words it searches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FtsQuery {
    /// The FTS5 expression: quoted words joined with `OR`.
    pub expression: String,
    /// The same words joined with `AND`: rows holding every word. Cheap to find even when
    /// each word is common, and the best rows when there are enough of them.
    pub all_words: String,
    /// The words searched, lower-cased, in the order they first appeared.
    pub terms: Vec<String>,
    /// The made names of the text ([`crate::identifiers`]), each as an FTS5 phrase, joined
    /// with `AND`: `old_field` is the words `old` and `field` side by side, which rows that
    /// merely hold both words apart (`old` here, `field` there) are not; a name of one word
    /// (`parseValue`, `test42`) is that word. `None` when the text names nothing, or says
    /// more than its made names.
    pub made_names: Option<String>,
    /// For a text that says more than its made names (a sentence around one), those made
    /// names as FTS5 phrases joined with `OR`: the rows that write one of them are ranked
    /// first, then the sentence's words rank the rest. `None` for a text that names
    /// nothing, or that is made names alone (then [`Self::made_names`]).
    pub named_in_text: Option<String>,
    /// Those made names as written, lower-cased (`self.do_query`, `model_fields`,
    /// `parsevalue`): a phrase matches words side by side whatever stands between them,
    /// and stemmed (`"model fields"` is also `models/fields`), so the rows that write a
    /// name exactly are told apart by their text ([`writes_name`]).
    pub written: Vec<String>,
}

impl FtsQuery {
    /// Whether the text names something: a made name ([`crate::identifiers`]: snake_case,
    /// CamelCase, dotted or path-like, a word with digits), of one word or several. Then the
    /// rows that write it are asked for first ([`Self::made_names`],
    /// [`Self::named_in_text`]) and full text leads the ranking: the message that wrote
    /// `parseValue` is what is asked for, as much as the one that wrote `parse_value`.
    pub fn names_something(&self) -> bool {
        self.made_names.is_some() || self.named_in_text.is_some()
    }
}

/// Why a query cannot be searched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryError {
    /// The text has no letters or digits at all.
    NoWords,
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoWords => {
                f.write_str("the query has no words to search for (letters or digits)")
            }
        }
    }
}

impl std::error::Error for QueryError {}

/// The FTS5 query for `text`. Only letters and digits reach the expression, always inside
/// double quotes, so no input can change the query's structure.
pub fn fts_query(text: &str) -> Result<FtsQuery, QueryError> {
    let mut words: Vec<String> = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let word = word.to_lowercase();
        if !words.contains(&word) {
            words.push(word);
        }
    }
    if words.is_empty() {
        return Err(QueryError::NoWords);
    }
    let content: Vec<String> = words
        .iter()
        .filter(|word| !STOPWORDS.contains(&word.as_str()))
        .cloned()
        .collect();
    let mut terms = if content.is_empty() { words } else { content };
    terms.truncate(MAX_QUERY_TERMS);
    let quoted: Vec<String> = terms.iter().map(|term| format!("\"{term}\"")).collect();
    let (phrases, written, names_only) = made_name_phrases(text, &terms);
    let joined = |with: &str| (!phrases.is_empty()).then(|| phrases.join(with));
    let (made_names, named_in_text) = if names_only {
        (joined(" AND "), None)
    } else {
        (None, joined(" OR "))
    };
    Ok(FtsQuery {
        expression: quoted.join(" OR "),
        all_words: quoted.join(" AND "),
        terms,
        made_names,
        named_in_text,
        written,
    })
}

/// The made names of `text`, each as an FTS5 phrase and as written (lower-cased), and
/// whether `text` is made names alone (every one of `terms`, its words, belongs to one).
fn made_name_phrases(text: &str, terms: &[String]) -> (Vec<String>, Vec<String>, bool) {
    let mut phrases: Vec<String> = Vec::new();
    let mut written: Vec<String> = Vec::new();
    let mut named: Vec<String> = Vec::new();
    crate::identifiers::identifiers(text, &mut |name| {
        let words: Vec<String> = name
            .split(|c: char| !c.is_alphanumeric())
            .filter(|word| !word.is_empty())
            .map(str::to_lowercase)
            .collect();
        let phrase = format!("\"{}\"", words.join(" "));
        named.extend(words.iter().cloned());
        if !words.is_empty() && phrases.len() < MAX_QUERY_TERMS && !phrases.contains(&phrase) {
            phrases.push(phrase);
            written.push(name.to_lowercase());
        }
    });
    let names_only = terms.iter().all(|term| named.contains(term));
    (phrases, written, names_only)
}

/// Whether `text` writes `name` (lower-case, as in [`FtsQuery::written`]) exactly, ignoring
/// case, with no letter, digit or `_` right before or after it: `old_field.model` writes
/// `old_field`, `models/fields` does not write `model_fields`, nor `old_fields` `old_field`.
pub fn writes_name(text: &str, name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    let is_name_char = |c: char| c.is_alphanumeric() || c == '_';
    let lower = text.to_lowercase();
    lower.match_indices(name).any(|(at, _)| {
        let before = lower[..at].chars().next_back();
        let after = lower[at + name.len()..].chars().next();
        !before.is_some_and(is_name_char) && !after.is_some_and(is_name_char)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn words_are_quoted_and_joined_with_or() {
        let query = fts_query("When did Caroline paint the sunrise?").unwrap();
        assert_eq!(query.expression, r#""caroline" OR "paint" OR "sunrise""#);
        assert_eq!(query.all_words, r#""caroline" AND "paint" AND "sunrise""#);
    }

    #[test]
    fn made_names_of_several_words_are_phrases() {
        let query = fts_query("self.do_query, card_parser.py").unwrap();
        assert_eq!(
            query.made_names.as_deref(),
            Some(r#""self do query" AND "card parser py""#)
        );
        let sentence = fts_query("why does self.do_query fail near card_parser.py").unwrap();
        assert_eq!(sentence.made_names, None);
        assert_eq!(
            sentence.named_in_text.as_deref(),
            Some(r#""self do query" OR "card parser py""#)
        );
        assert_eq!(
            fts_query("self.do_query, card_parser.py")
                .unwrap()
                .named_in_text,
            None
        );
        assert_eq!(fts_query("why does it fail").unwrap().named_in_text, None);
        assert_eq!(fts_query("parse the card").unwrap().made_names, None);
        assert!(!fts_query("parse the card").unwrap().names_something());
    }

    /// A made name the tokenizer keeps as one word (CamelCase, a word with digits) names
    /// something as much as one it splits (snake_case, dotted, a path).
    #[test]
    fn a_made_name_of_one_word_names_something() {
        for text in [
            "parseValue",
            "test42",
            "HTTPServer2",
            "old_field",
            "card_parser.py",
        ] {
            assert!(fts_query(text).unwrap().names_something(), "{text}");
        }
        let alone = fts_query("parseValue").unwrap();
        assert_eq!(alone.made_names.as_deref(), Some(r#""parsevalue""#));
        assert_eq!(alone.written, ["parsevalue"]);
        let sentence = fts_query("parseValue v2").unwrap();
        assert_eq!(sentence.made_names, None);
        assert_eq!(sentence.named_in_text.as_deref(), Some(r#""parsevalue""#));
        // Short runs and plain words are not names (`v2`, `HTTP`).
        for text in ["v2 of it", "the HTTP server", "When did Caroline paint?"] {
            assert!(!fts_query(text).unwrap().names_something(), "{text}");
        }
    }

    #[test]
    fn made_names_are_kept_as_written() {
        let query = fts_query("why does self.do_query fail near Card_Parser.py").unwrap();
        assert_eq!(query.written, ["self.do_query", "card_parser.py"]);
        assert_eq!(fts_query("parseValue v2").unwrap().written, ["parsevalue"]);
        assert!(fts_query("parse v2").unwrap().written.is_empty());
    }

    #[test]
    fn a_name_is_written_only_exactly() {
        assert!(writes_name("see self.old_field.model here", "old_field"));
        assert!(writes_name("tests/Model_Fields/", "model_fields"));
        assert!(writes_name("model_fields", "model_fields"));
        assert!(!writes_name("django/db/models/fields/", "model_fields"));
        assert!(!writes_name("old_fields", "old_field"));
        assert!(!writes_name("my_old_field", "old_field"));
        assert!(!writes_name("anything", ""));
        assert!(writes_name("Ünïcode then x_y", "x_y"));
    }

    #[test]
    fn fts_syntax_is_searched_as_text() {
        let query = fts_query(r#"NEAR("a" b) col:x -y * ^z AND"#).unwrap();
        assert_eq!(
            query.terms,
            ["near", "b", "col", "x", "y", "z"]
                .map(String::from)
                .to_vec()
        );
    }

    #[test]
    fn a_query_of_only_common_words_keeps_them() {
        assert_eq!(fts_query("who was it").unwrap().terms, ["who", "was", "it"]);
    }

    #[test]
    fn punctuation_alone_is_refused() {
        assert_eq!(fts_query(" \"*:- () "), Err(QueryError::NoWords));
        assert_eq!(fts_query(""), Err(QueryError::NoWords));
    }

    #[test]
    fn long_queries_are_capped() {
        let text: String = (0..500).map(|i| format!("word{i} ")).collect();
        assert_eq!(fts_query(&text).unwrap().terms.len(), MAX_QUERY_TERMS);
    }

    proptest! {
        #[test]
        fn expressions_hold_only_quoted_alphanumeric_terms(text in any::<String>()) {
            if let Ok(query) = fts_query(&text) {
                for term in query.expression.split(" OR ") {
                    let inner = term.strip_prefix('"').and_then(|t| t.strip_suffix('"'));
                    let inner = inner.expect("every term is quoted");
                    prop_assert!(!inner.is_empty());
                    prop_assert!(inner.chars().all(char::is_alphanumeric));
                }
                for phrase in query.made_names.iter().flat_map(|names| names.split(" AND ")) {
                    let inner = phrase.strip_prefix('"').and_then(|t| t.strip_suffix('"'));
                    let inner = inner.expect("every phrase is quoted");
                    let words_only = inner
                        .split(' ')
                        .all(|word| !word.is_empty() && word.chars().all(char::is_alphanumeric));
                    prop_assert!(words_only);
                }
            }
        }
    }
}
