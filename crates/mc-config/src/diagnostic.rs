//! What the loader tells the user: where each value came from, and what it ignored.

use std::fmt;
use std::path::PathBuf;

/// The layer a configured value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Nobody set it: the DESIGN §9 default.
    Default,
    /// The user-level file at this path.
    User(PathBuf),
    /// The project-level file at this path.
    Project(PathBuf),
}

impl Source {
    /// The file behind this layer, if any.
    pub fn file(&self) -> Option<&PathBuf> {
        match self {
            Self::Default => None,
            Self::User(path) | Self::Project(path) => Some(path),
        }
    }
}

impl fmt::Display for Source {
    /// `default`, or the file's path.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.file() {
            None => f.write_str("default"),
            Some(path) => write!(f, "{}", path.display()),
        }
    }
}

/// A problem found while loading: a file that was skipped, or one key that was ignored.
///
/// Each diagnostic costs the user only what it names: the key (or, with no key, the file)
/// falls back to the layer below, and everything else still applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file at fault; `None` only for a failure that no single file caused.
    pub file: Option<PathBuf>,
    /// The dotted key that was ignored; `None` when the whole file was skipped.
    pub key: Option<String>,
    /// What is wrong and, where it helps, what to write instead.
    pub reason: String,
}

impl fmt::Display for Diagnostic {
    /// `<file>: <key>: <reason>; <what was ignored>`, leaving out the parts that are absent.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}: ", file.display())?;
        }
        match &self.key {
            Some(key) => write!(f, "{key}: {}; the key is ignored", self.reason),
            None if self.file.is_some() => write!(f, "{}; the file is ignored", self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_key_and_reason() {
        let diagnostic = Diagnostic {
            file: Some(PathBuf::from("/p/.magic-context.jsonc")),
            key: Some("pass.refusal_percent".to_owned()),
            reason: "must be between 92 and 100 percent, got 50".to_owned(),
        };
        assert_eq!(
            diagnostic.to_string(),
            "/p/.magic-context.jsonc: pass.refusal_percent: must be between 92 and 100 percent, got 50; \
             the key is ignored"
        );
        assert_eq!(Source::Default.to_string(), "default");
        assert_eq!(
            Source::User(PathBuf::from("/u.jsonc")).to_string(),
            "/u.jsonc"
        );
    }
}
