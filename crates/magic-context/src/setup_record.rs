//! What `setup` changed for a host, so `--undo` can put it back and `doctor` can check it.
//!
//! One JSON record per host in the data directory (`setup/<host>.json`), holding per file:
//! where its backup is (none when `setup` created the file), a hash of the bytes `setup`
//! wrote, and per key the value it had before. The record never holds file contents: host
//! files can hold API keys (Claude Code keeps one in `~/.claude.json` for some logins), and
//! secrets are never stored. The backup sits beside the file it copies, with its
//! permissions, where the user expects it.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config_doc::Format;
use crate::host_config::{Host, Purpose};

/// The suffix of a backup: `settings.json` → `settings.json.magic-context-backup`.
pub const BACKUP_SUFFIX: &str = ".magic-context-backup";

/// What `setup` did for one host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetupRecord {
    /// The host's id (`claude-code`, …).
    pub host: String,
    /// The proxy URL the host was pointed at.
    pub proxy_url: String,
    /// The files changed, in the order they were changed.
    pub files: Vec<FileRecord>,
}

/// What `setup` did to one file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRecord {
    /// The file.
    pub path: PathBuf,
    /// Its syntax.
    pub format: Format,
    /// Its backup from before the first change; `None` when `setup` created the file.
    pub backup: Option<PathBuf>,
    /// blake3 of the bytes last written, to tell whether the host changed the file since.
    pub written_blake3: String,
    /// The keys written.
    pub keys: Vec<KeyRecord>,
    /// The folders `setup` created to hold the file, outermost first: removed again by
    /// `--undo` when it removes the file and they are empty, so undo leaves no trace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_dirs: Vec<PathBuf>,
}

/// One key `setup` wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyRecord {
    /// The key's path from the top of the file.
    pub key: Vec<String>,
    /// The value written.
    pub value: Value,
    /// The value before the first change; absent when the key did not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior: Option<Value>,
    /// How many of the key's parents `setup` created (removed again on undo when empty).
    pub created_parents: usize,
    /// Why it was written.
    pub purpose: PurposeName,
}

/// [`Purpose`] as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PurposeName {
    /// Points the host at the proxy.
    BaseUrl,
    /// Registers the MCP server.
    Mcp,
    /// Turns the host's compaction off.
    Compaction,
}

impl From<Purpose> for PurposeName {
    fn from(purpose: Purpose) -> Self {
        match purpose {
            Purpose::BaseUrl => Self::BaseUrl,
            Purpose::Mcp => Self::Mcp,
            Purpose::Compaction => Self::Compaction,
        }
    }
}

/// Where `host`'s record lives under the data directory `data_dir`.
pub fn record_path(data_dir: &Path, host: Host) -> PathBuf {
    data_dir.join("setup").join(format!("{}.json", host.id()))
}

/// Where the backup of `path` goes.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(BACKUP_SUFFIX);
    PathBuf::from(name)
}

/// The hash recorded for written bytes.
pub fn hash_of(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// Reads `host`'s record; `None` when the host was never set up (or was undone).
pub fn read(data_dir: &Path, host: Host) -> anyhow::Result<Option<SetupRecord>> {
    let path = record_path(data_dir, host);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", path.display())),
    };
    serde_json::from_str(&text)
        .map(Some)
        .with_context(|| format!("{} is not a setup record", path.display()))
}

/// Writes `record` (private to the user, like the rest of the data directory).
pub fn write(data_dir: &Path, record: &SetupRecord) -> anyhow::Result<()> {
    let host = Host::ALL
        .into_iter()
        .find(|host| host.id() == record.host)
        .context("setup record for an unknown host")?;
    let path = record_path(data_dir, host);
    if let Some(dir) = path.parent() {
        create_private_dir(dir)?;
    }
    let mut text = serde_json::to_string_pretty(record).context("cannot format the record")?;
    text.push('\n');
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// Removes `host`'s record.
pub fn remove(data_dir: &Path, host: Host) -> anyhow::Result<()> {
    let path = record_path(data_dir, host);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error).with_context(|| format!("cannot remove {}", path.display())),
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))
}
