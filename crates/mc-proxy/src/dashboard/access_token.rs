//! The dashboard's access token: a random value in a file only the user can read.
//!
//! Conversations are private, and the proxy's port is open to every program and every web
//! page on the machine. The token is what proves a request comes from the user: only someone
//! who can read the data directory (where the store already lives, 0700) can learn it.
//! `magic-context dashboard` prints a URL carrying it; the proxy reads the same file.
//!
//! The file is created once and then reused, so a bookmarked URL keeps working across
//! restarts; deleting the file revokes every browser's access at the next start of either
//! side. It is written beside the store with mode 0600 and published by a hard link, so two
//! processes creating it at once agree on one value and neither reads a half-written file.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The token file's name inside the data directory.
pub const TOKEN_FILE: &str = "dashboard-token";

/// Random bytes in a token: 256 bits, beyond guessing over a loopback socket.
const TOKEN_BYTES: usize = 32;

/// The dashboard's access token. Its `Debug` hides the value, so it never reaches a log.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken(String);

impl fmt::Debug for AccessToken {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("AccessToken(<redacted>)")
    }
}

impl AccessToken {
    /// The token as the URL and the cookie carry it (lowercase hex).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `offered` is this token, compared in time independent of where they differ,
    /// so response timing does not leak a prefix.
    pub fn matches(&self, offered: &str) -> bool {
        let expected = self.0.as_bytes();
        let offered = offered.as_bytes();
        if expected.len() != offered.len() {
            return false;
        }
        expected
            .iter()
            .zip(offered)
            .fold(0u8, |differ, (a, b)| differ | (a ^ b))
            == 0
    }
}

/// Why the token could not be read or created.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The file could not be read, written or linked.
    #[error("cannot {doing} the dashboard token {path}: {source}")]
    Io {
        /// What was being done.
        doing: &'static str,
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// The file holds something that is not a token (edited by hand, truncated).
    #[error(
        "the dashboard token {path} is not a token written by magic-context; delete it and a new \
         one is made"
    )]
    Malformed {
        /// The file.
        path: PathBuf,
    },
    /// The system's random source failed.
    #[error("cannot draw random bytes for the dashboard token: {0}")]
    Random(String),
}

/// The token in `data_dir`, created (0600) when there is none yet.
pub fn load_or_create(data_dir: &Path) -> Result<AccessToken, TokenError> {
    let path = data_dir.join(TOKEN_FILE);
    match read(&path) {
        Err(TokenError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {}
        found => return found,
    }
    let token = fresh()?;
    publish(&path, &token)?;
    // Another process may have published first: its value is the one every reader sees.
    read(&path)
}

/// The token stored at `path`.
fn read(path: &Path) -> Result<AccessToken, TokenError> {
    let text = fs::read_to_string(path).map_err(|source| TokenError::Io {
        doing: "read",
        path: path.to_owned(),
        source,
    })?;
    let value = text.trim();
    if value.len() != TOKEN_BYTES * 2 || !value.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return Err(TokenError::Malformed {
            path: path.to_owned(),
        });
    }
    Ok(AccessToken(value.to_ascii_lowercase()))
}

/// A new random token.
fn fresh() -> Result<AccessToken, TokenError> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).map_err(|error| TokenError::Random(error.to_string()))?;
    let hex = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    Ok(AccessToken(hex))
}

/// Writes `token` to a private temporary file and links it to `path`; an existing `path`
/// is left as it is.
fn publish(path: &Path, token: &AccessToken) -> Result<(), TokenError> {
    let io_error = |doing: &'static str, at: &Path| {
        let at = at.to_owned();
        move |source| TokenError::Io {
            doing,
            path: at,
            source,
        }
    };
    let staging = path.with_extension(format!("{}.tmp", std::process::id()));
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(&staging)
        .map_err(io_error("create", &staging))?;
    let written = file
        .write_all(format!("{}\n", token.as_str()).as_bytes())
        .and_then(|()| file.sync_all());
    let linked = written.and_then(|()| match fs::hard_link(&staging, path) {
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    });
    let removed = fs::remove_file(&staging);
    linked.map_err(io_error("write", path))?;
    removed.map_err(io_error("remove", &staging))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_created_private_and_then_reused() {
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_create(dir.path()).unwrap();
        assert_eq!(first.as_str().len(), 64);
        let again = load_or_create(dir.path()).unwrap();
        assert_eq!(first, again);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(dir.path().join(TOKEN_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, [TOKEN_FILE], "no staging file is left behind");
    }

    #[test]
    fn two_directories_get_different_tokens() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        assert_ne!(
            load_or_create(a.path()).unwrap(),
            load_or_create(b.path()).unwrap()
        );
    }

    #[test]
    fn a_hand_edited_file_is_refused_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(TOKEN_FILE), "letmein\n").unwrap();
        assert!(matches!(
            load_or_create(dir.path()),
            Err(TokenError::Malformed { .. })
        ));
    }

    #[test]
    fn matching_is_exact() {
        let token = AccessToken("ab".repeat(32));
        assert!(token.matches(&"ab".repeat(32)));
        assert!(!token.matches(&"ab".repeat(31)));
        assert!(!token.matches(&format!("{}ac", "ab".repeat(31))));
        assert!(!token.matches(""));
        assert_eq!(format!("{token:?}"), "AccessToken(<redacted>)");
    }
}
