//! What a memory names that the code can confirm: file paths, code identifiers and values
//! stated for them.
//!
//! Plain words are left alone: "the retry limit" cannot be searched for, `MAX_RETRIES` can.
//! A token is a path when it has a file extension from a list of source and config types (or
//! a slash and any lettered extension); an identifier when it is written like code
//! (`snake_case`, `SCREAMING_CASE`, `camelCase`, `PascalCase` with an inner capital, or
//! anything in backticks); a value when it follows an identifier after `=`, `is`, `to` or `:`.

/// One thing a memory names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mention {
    /// A file path, relative or bare (`src/net.rs`, `Cargo.toml`).
    Path(String),
    /// A code identifier (`MAX_RETRIES`, `parseConfig`).
    Name(String),
    /// A value stated for a name (`MAX_RETRIES = 5`).
    Value {
        /// The name.
        name: String,
        /// The value, as written.
        value: String,
    },
}

/// Extensions that make a bare token (no slash) a file name.
const FILE_EXTENSIONS: &[&str] = &[
    "rs", "toml", "md", "json", "jsonc", "yaml", "yml", "py", "ts", "tsx", "js", "jsx", "mjs",
    "go", "java", "kt", "c", "h", "cc", "cpp", "hpp", "cs", "rb", "php", "swift", "sh", "sql",
    "lock", "cfg", "ini", "html", "css", "scss", "proto", "txt", "xml", "gradle", "env",
];

/// Words that link a name to its value (`=`, `==` and `:` standing alone link too).
const LINK_WORDS: &[&str] = &["is", "to", "of"];

/// Shortest identifier worth searching for.
const MIN_NAME_CHARS: usize = 3;

/// The mentions in `text`, each once, in order of first appearance.
pub fn mentions_of(text: &str) -> Vec<Mention> {
    let tokens: Vec<Token> = text.split_whitespace().map(Token::read).collect();
    let mut found: Vec<Mention> = Vec::new();
    let mut push = |mention: Mention| {
        if !found.contains(&mention) {
            found.push(mention);
        }
    };
    for (index, token) in tokens.iter().enumerate() {
        if is_path(&token.bare) {
            push(Mention::Path(token.bare.clone()));
            continue;
        }
        let names = token.names();
        for name in &names {
            push(Mention::Name(name.clone()));
        }
        if let (Some(name), Some(value)) = (names.last(), value_after(&tokens, index)) {
            push(Mention::Value {
                name: name.clone(),
                value,
            });
        }
    }
    found
}

/// A whitespace-separated piece of the text, with its wrapping punctuation removed.
struct Token {
    /// The token without quotes, brackets and trailing punctuation.
    bare: String,
    /// Whether it was written in backticks (code by the author's own marking).
    ticked: bool,
    /// Whether it ended with `=` or `:` glued on (`MAX_RETRIES=5` is split elsewhere).
    links_next: bool,
}

impl Token {
    fn read(raw: &str) -> Self {
        let ticked = raw.contains('`');
        let wrapping = |c: char| "`'\"()[]{}<>,;!?".contains(c);
        let trimmed = raw
            .trim_start_matches(wrapping)
            .trim_end_matches(|c: char| wrapping(c) || c == '.');
        let links_next = trimmed.ends_with(':') || trimmed.ends_with('=');
        let bare = trimmed
            .trim_end_matches([':', '='])
            .trim_end_matches("()")
            .to_owned();
        Self {
            bare,
            ticked,
            links_next,
        }
    }

    /// The identifiers the token holds (`Config::load` holds two).
    fn names(&self) -> Vec<String> {
        self.bare
            .split("::")
            .filter(|piece| is_identifier(piece) && (self.ticked || looks_like_code(piece)))
            .map(str::to_owned)
            .collect()
    }
}

/// The value stated after the name at `index`, when a link word follows it.
fn value_after(tokens: &[Token], index: usize) -> Option<String> {
    let name = tokens.get(index)?;
    let value_at = if name.links_next {
        index + 1
    } else {
        let link = tokens.get(index + 1)?;
        let is_link =
            LINK_WORDS.contains(&link.bare.as_str()) || (link.links_next && link.bare.is_empty());
        if !is_link {
            return None;
        }
        index + 2
    };
    let value = &tokens.get(value_at)?.bare;
    let is_value = !value.is_empty()
        && (value.chars().any(|c| c.is_ascii_digit())
            || looks_like_code(value)
            || value.contains('"'));
    is_value.then(|| value.clone())
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    text.len() >= MIN_NAME_CHARS
        && chars
            .next()
            .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Written like code rather than like a word: an inner underscore, or a capital after a
/// lower-case letter.
fn looks_like_code(text: &str) -> bool {
    let inner_underscore = text.trim_matches('_').contains('_');
    let chars: Vec<char> = text.chars().collect();
    let camel = chars
        .windows(2)
        .any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase());
    is_identifier(text) && (inner_underscore || camel)
}

fn is_path(text: &str) -> bool {
    if text.contains("://") || text.starts_with('@') {
        return false;
    }
    let Some((stem, extension)) = text.rsplit_once('.') else {
        return false;
    };
    let file = stem.rsplit('/').next().unwrap_or(stem);
    let lettered = !extension.is_empty()
        && extension.len() <= 8
        && extension.chars().all(|c| c.is_ascii_alphanumeric())
        && extension
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic());
    let known = FILE_EXTENSIONS.contains(&extension.to_ascii_lowercase().as_str());
    let path_chars = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c));
    path_chars && !file.is_empty() && (known || (text.contains('/') && lettered))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> Mention {
        Mention::Path(text.into())
    }

    fn name(text: &str) -> Mention {
        Mention::Name(text.into())
    }

    fn value(name: &str, value: &str) -> Mention {
        Mention::Value {
            name: name.into(),
            value: value.into(),
        }
    }

    #[test]
    fn paths_names_and_values_are_found_and_words_are_not() {
        assert_eq!(
            mentions_of("Retries are capped by MAX_RETRIES = 5 in src/net.rs (see Cargo.toml)."),
            [
                name("MAX_RETRIES"),
                value("MAX_RETRIES", "5"),
                path("src/net.rs"),
                path("Cargo.toml")
            ]
        );
        assert_eq!(
            mentions_of("Use `Config::load` and parseConfig; the port is `listen_port: 4141`."),
            [
                name("Config"),
                name("load"),
                name("parseConfig"),
                name("listen_port"),
                value("listen_port", "4141"),
            ]
        );
        assert_eq!(
            mentions_of("Always run the tests before a commit, e.g. twice."),
            []
        );
    }

    #[test]
    fn urls_versions_and_short_names_are_not_mentions() {
        assert_eq!(
            mentions_of("See https://example.com/a.html for v1.2 and `id`."),
            []
        );
        assert_eq!(
            mentions_of("timeout_ms defaults to 3000 in config/app.yaml"),
            [name("timeout_ms"), path("config/app.yaml")]
        );
        assert_eq!(
            mentions_of("timeout_ms is 3000, set in crates/x/build.gradle.kts"),
            [
                name("timeout_ms"),
                value("timeout_ms", "3000"),
                path("crates/x/build.gradle.kts")
            ]
        );
    }

    #[test]
    fn each_mention_is_listed_once() {
        assert_eq!(
            mentions_of("src/a.rs and src/a.rs; run_all calls run_all"),
            [path("src/a.rs"), name("run_all")]
        );
    }
}
