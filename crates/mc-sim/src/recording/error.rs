//! Why a recording could not be loaded.
//!
//! Every variant names the file, and where the file is the problem, the place inside it (a
//! line of a JSON Lines file, an entry of a trajectory's `messages`), so a user can open the
//! file at that spot. A recording is loaded whole or not at all: replaying half a session
//! would price a different session without saying so.

use std::fmt;
use std::io;
use std::path::PathBuf;

use mc_wire::WireError;
use mc_wire::sse::SseError;

use super::RecordingFormat;

/// A place inside a recording file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// The file as a whole.
    File,
    /// A 1-based line of a JSON Lines file.
    Line(usize),
    /// A 0-based entry of a trajectory's `messages` array, as in `$.messages[3]`.
    Message(usize),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File => f.write_str("the file"),
            Self::Line(line) => write!(f, "line {line}"),
            Self::Message(index) => write!(f, "messages[{index}]"),
        }
    }
}

/// Why [`load`](super::load) failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// The file or directory could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: io::Error,
    },
    /// A line or document is not valid JSON, or not the JSON shape the format needs.
    #[error("{}, {at}: not a valid {what}: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// Where in the file.
        at: Location,
        /// What was being read (`"JSON line"`, `"trajectory"`, `"chat message"`).
        what: &'static str,
        /// The parser's reason, with its own line and column.
        #[source]
        source: serde_json::Error,
    },
    /// A provider request or response does not decode with the wire codecs.
    #[error("{}, {at}: {source}", path.display())]
    Wire {
        /// The file.
        path: PathBuf,
        /// Where in the file.
        at: Location,
        /// The codec's reason, with a JSON path.
        #[source]
        source: WireError,
    },
    /// A recorded SSE response body is not a well-formed event stream.
    #[error("{}, {at}: the recorded SSE body is broken: {source}", path.display())]
    Sse {
        /// The file.
        path: PathBuf,
        /// Where in the file.
        at: Location,
        /// The decoder's reason, with a byte offset into the body.
        #[source]
        source: SseError,
    },
    /// The JSON is well formed but misses something the format requires.
    #[error("{}, {at}: {reason}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Where in the file.
        at: Location,
        /// What is missing or wrong, and what was expected.
        reason: String,
    },
    /// Auto-detection could not tell which format a file is in.
    #[error(
        "cannot tell the format of {}: {reason}; pass it explicitly (swe-traj, anthropic-capture or claude-code)",
        path.display()
    )]
    Unrecognised {
        /// The file.
        path: PathBuf,
        /// What the file looked like.
        reason: &'static str,
    },
    /// A file holds no model call to replay (a capture without a main-agent call, a session
    /// file without an assistant response).
    #[error("{} holds no model call to replay as {format}: {reason}", path.display())]
    NoSteps {
        /// The file.
        path: PathBuf,
        /// The format it was read as.
        format: RecordingFormat,
        /// What the file held instead.
        reason: &'static str,
    },
    /// A directory holds no file any loader recognises.
    #[error(
        "{} holds no recording: no .traj.json trajectory, API capture or Claude Code session with a model call",
        dir.display()
    )]
    EmptyDirectory {
        /// The directory.
        dir: PathBuf,
    },
    /// A format name that is none of the known ones.
    #[error(
        "unknown recording format `{name}`: expected swe-traj, anthropic-capture or claude-code"
    )]
    UnknownFormat {
        /// The name given.
        name: String,
    },
}

impl RecordingError {
    /// The file the error is about, when it concerns one.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Self::Io { path, .. }
            | Self::Json { path, .. }
            | Self::Wire { path, .. }
            | Self::Sse { path, .. }
            | Self::Invalid { path, .. }
            | Self::Unrecognised { path, .. }
            | Self::NoSteps { path, .. } => Some(path),
            Self::EmptyDirectory { dir } => Some(dir),
            Self::UnknownFormat { .. } => None,
        }
    }
}

/// Builds the errors about one file, so loaders name it the same way everywhere.
#[derive(Debug, Clone, Copy)]
pub(super) struct FileErrors<'a> {
    pub(super) path: &'a std::path::Path,
}

impl FileErrors<'_> {
    pub(super) fn invalid(self, at: Location, reason: impl Into<String>) -> RecordingError {
        RecordingError::Invalid {
            path: self.path.to_owned(),
            at,
            reason: reason.into(),
        }
    }

    pub(super) fn json(
        self,
        at: Location,
        what: &'static str,
        source: serde_json::Error,
    ) -> RecordingError {
        RecordingError::Json {
            path: self.path.to_owned(),
            at,
            what,
            source,
        }
    }

    pub(super) fn wire(self, at: Location, source: WireError) -> RecordingError {
        RecordingError::Wire {
            path: self.path.to_owned(),
            at,
            source,
        }
    }

    pub(super) fn sse(self, at: Location, source: SseError) -> RecordingError {
        RecordingError::Sse {
            path: self.path.to_owned(),
            at,
            source,
        }
    }

    pub(super) fn no_steps(self, format: RecordingFormat, reason: &'static str) -> RecordingError {
        RecordingError::NoSteps {
            path: self.path.to_owned(),
            format,
            reason,
        }
    }
}
