//! Identities of sessions, projects and the client hosts that drive them.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A session's id: the client's own id where it sends one, else one the proxy minted.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(String);

impl SessionId {
    /// Longest id accepted; ids longer than this are client bugs or attacks, not sessions.
    pub const MAX_LEN: usize = 256;

    /// Validates an id: non-empty, at most [`Self::MAX_LEN`] bytes, no control characters.
    pub fn new(id: impl Into<String>) -> Result<Self, InvalidId> {
        let id = id.into();
        if id.is_empty() || id.len() > Self::MAX_LEN || id.chars().any(char::is_control) {
            return Err(InvalidId {
                what: "session id",
                value: clip(&id),
            });
        }
        Ok(Self(id))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A project's stable identity (the git root commit, else a hash of the canonical path).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProjectId(String);

impl ProjectId {
    /// Validates an id with the same rules as [`SessionId::new`].
    pub fn new(id: impl Into<String>) -> Result<Self, InvalidId> {
        let id = id.into();
        if id.is_empty() || id.len() > SessionId::MAX_LEN || id.chars().any(char::is_control) {
            return Err(InvalidId {
                what: "project id",
                value: clip(&id),
            });
        }
        Ok(Self(id))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ProjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn clip(value: &str) -> String {
    value.chars().take(80).filter(|c| !c.is_control()).collect()
}

/// An id that cannot name a session or project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidId {
    /// What kind of id was rejected.
    pub what: &'static str,
    /// The rejected value, clipped, control characters removed.
    pub value: String,
}

impl fmt::Display for InvalidId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid {} `{}`: it must be 1 to {} characters with no control characters",
            self.what,
            self.value,
            SessionId::MAX_LEN
        )
    }
}

impl std::error::Error for InvalidId {}

/// The client program driving a session; its quirks decide how ids and pinned context are
/// found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Host {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
    /// OpenCode.
    OpenCode,
    /// The Pi coding agent.
    Pi,
    /// Any other client.
    Other,
}

impl Host {
    /// The kebab-case name used in storage and output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::OpenCode => "open-code",
            Self::Pi => "pi",
            Self::Other => "other",
        }
    }

    /// Parses the name written by [`Host::as_str`]; unknown names are [`Host::Other`].
    pub fn from_name(name: &str) -> Self {
        match name {
            "claude-code" => Self::ClaudeCode,
            "codex" => Self::Codex,
            "open-code" => Self::OpenCode,
            "pi" => Self::Pi,
            _ => Self::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_validated() {
        assert_eq!(SessionId::new("abc").unwrap().as_str(), "abc");
        assert!(SessionId::new("").is_err());
        assert!(SessionId::new("a\nb").is_err());
        let err = SessionId::new("x".repeat(300)).unwrap_err();
        assert!(err.to_string().starts_with("invalid session id `xxxx"));
        assert!(ProjectId::new("root-commit").is_ok());
    }

    #[test]
    fn host_names_round_trip() {
        for host in [
            Host::ClaudeCode,
            Host::Codex,
            Host::OpenCode,
            Host::Pi,
            Host::Other,
        ] {
            assert_eq!(Host::from_name(host.as_str()), host);
        }
    }
}
