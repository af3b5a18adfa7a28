//! Why a whole config file was skipped.
//!
//! Loading never fails as a whole (a broken file must not stop the proxy), so these errors
//! end up as [`crate::Diagnostic`]s; the enum keeps the causes typed until then.

use std::io;

/// A config file that could not be used at all; its layer is skipped.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file exists but could not be read (permissions, not UTF-8, a directory).
    #[error("cannot read the file: {source}")]
    Read {
        /// The operating system's reason.
        #[source]
        source: io::Error,
    },
    /// The file named by `MAGIC_CONTEXT_CONFIG` does not exist.
    #[error("file not found (it is named by {env_var}); check the path")]
    Missing {
        /// The variable that named it.
        env_var: &'static str,
    },
    /// The text is not valid JSONC.
    #[error("{}", syntax_message(*.line, *.column, .message))]
    Syntax {
        /// 1-based line of the error, 0 when unknown.
        line: usize,
        /// 1-based column of the error, 0 when unknown.
        column: usize,
        /// The parser's description.
        message: String,
    },
    /// The top level is an array, number or string instead of an object of settings.
    #[error("the file must hold one JSON object of settings, found {found}")]
    NotAnObject {
        /// What was found instead ("an array", "a number", ...).
        found: &'static str,
    },
}

fn syntax_message(line: usize, column: usize, message: &str) -> String {
    if line == 0 {
        format!("syntax error: {message}")
    } else {
        format!("syntax error at line {line}, column {column}: {message}")
    }
}
