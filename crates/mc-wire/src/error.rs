//! Errors of the wire codecs.

use std::fmt;

/// Why a body could not be decoded.
///
/// Every variant says where the problem is (line and column for syntax, a JSON path such as
/// `$.messages[3].content[0].type` for shape), so the proxy can answer the client with an
/// error it can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The body is larger than the configured limit; it was not parsed.
    #[error("body is {size} bytes, over the {limit}-byte limit")]
    TooLarge {
        /// Size of the body in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// The body is not valid JSON (includes invalid UTF-8, nesting deeper than 128 levels and
    /// a body cut short).
    #[error("malformed JSON at line {line}, column {column}: {reason}")]
    Syntax {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What the parser found wrong.
        reason: String,
    },
    /// The JSON is valid but a field has the wrong shape.
    #[error("invalid value at `{path}`: {reason}")]
    Shape {
        /// Where the bad value is, as a JSON path.
        path: String,
        /// What was expected and what was found.
        reason: String,
    },
}

impl WireError {
    pub(crate) fn from_json(error: &serde_json::Error) -> Self {
        let full = error.to_string();
        // serde_json appends " at line L column C"; the position has its own fields.
        let reason = match full.rfind(" at line ") {
            Some(cut) => full[..cut].to_owned(),
            None => full,
        };
        let reason = if error.is_eof() {
            format!("{reason} (the body was cut short)")
        } else {
            reason
        };
        Self::Syntax {
            line: error.line(),
            column: error.column(),
            reason,
        }
    }

    pub(crate) fn shape(path: &JsonPath<'_>, reason: impl Into<String>) -> Self {
        Self::Shape {
            path: path.to_string(),
            reason: reason.into(),
        }
    }
}

/// Result of the wire codecs.
pub type Result<T> = std::result::Result<T, WireError>;

/// A position inside a JSON document, built on the stack while decoding and formatted only
/// when an error needs it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum JsonPath<'a> {
    Root,
    Key(&'a JsonPath<'a>, &'a str),
    Index(&'a JsonPath<'a>, usize),
}

impl<'a> JsonPath<'a> {
    pub(crate) fn key(&'a self, key: &'a str) -> JsonPath<'a> {
        JsonPath::Key(self, key)
    }

    pub(crate) fn index(&'a self, index: usize) -> JsonPath<'a> {
        JsonPath::Index(self, index)
    }
}

impl fmt::Display for JsonPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Root => f.write_str("$"),
            Self::Key(parent, key) => write!(f, "{parent}.{key}"),
            Self::Index(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

/// Names a JSON value's type for error messages.
pub(crate) fn type_name(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}
