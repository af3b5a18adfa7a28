//! Read-only access to a project's folder for the dreamer's tasks.
//!
//! Every path a task reads comes from text a model or a memory wrote, so each is checked
//! before it is opened: it must be relative, must not climb out with `..`, and must still be
//! inside the folder once symlinks are resolved (a link pointing at `~/.ssh` is refused, not
//! followed). Files over a size cap are refused too: a memory naming a 2 GB log must not
//! make a nightly run read it. Nothing here writes.
//!
//! Listing honours `.gitignore` by asking git itself (`git ls-files`), which already knows
//! every ignore rule, nested files and the user's global excludes; a folder that is not a
//! repository is walked instead, skipping hidden folders. This keeps an ignore-file parser
//! out of the dependency tree.

use std::fs;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use crate::error::{DreamerError, Result};

/// Files larger than this are not read, in bytes: source files are far smaller, and a
/// generated bundle or a log tells nothing about a memory.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Most files a listing returns: a bound on one run's work in a huge monorepo.
pub const MAX_LISTED_FILES: usize = 20_000;

/// A project folder, opened read-only.
#[derive(Debug, Clone)]
pub struct ProjectFolder {
    root: PathBuf,
    max_file_bytes: u64,
}

impl ProjectFolder {
    /// Opens `root` (which must exist), refusing files over `max_file_bytes`.
    pub fn open(root: &Path, max_file_bytes: u64) -> Result<Self> {
        let root = fs::canonicalize(root).map_err(|source| DreamerError::Folder {
            root: root.to_owned(),
            source,
        })?;
        Ok(Self {
            root,
            max_file_bytes,
        })
    }

    /// The folder, with its symlinks resolved.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where `relative` is, when it stays inside the folder. A path that does not exist is
    /// returned unresolved (there is no link in it to follow), so callers can ask whether
    /// it exists; one that exists is returned with its links resolved.
    pub fn resolve(&self, relative: &str) -> Result<PathBuf> {
        let outside = || DreamerError::OutsideProject {
            path: relative.to_owned(),
        };
        let path = Path::new(relative);
        let climbs = path
            .components()
            .any(|part| !matches!(part, Component::Normal(_) | Component::CurDir));
        if relative.is_empty() || climbs {
            return Err(outside());
        }
        let joined = self.root.join(path);
        match fs::canonicalize(&joined) {
            Ok(real) if real.starts_with(&self.root) => Ok(real),
            Ok(_) => Err(outside()),
            Err(_) if fs::symlink_metadata(&joined).is_ok() => Err(outside()),
            Err(_) => Ok(joined),
        }
    }

    /// Whether `relative` names an existing file or folder inside the project.
    pub fn exists(&self, relative: &str) -> Result<bool> {
        Ok(self.resolve(relative)?.exists())
    }

    /// The text of file `relative`, refused when it is outside the folder, over the size cap
    /// or not UTF-8 text.
    pub fn read_text(&self, relative: &str) -> Result<String> {
        let path = self.resolve(relative)?;
        let read_error = |source| DreamerError::Read {
            path: relative.to_owned(),
            source,
        };
        let bytes = fs::metadata(&path).map_err(read_error)?.len();
        if bytes > self.max_file_bytes {
            return Err(DreamerError::TooLarge {
                path: relative.to_owned(),
                bytes,
                cap: self.max_file_bytes,
            });
        }
        let raw = fs::read(&path).map_err(read_error)?;
        if raw.contains(&0) {
            return Err(read_error(std::io::Error::other("a binary file")));
        }
        String::from_utf8(raw).map_err(|_| read_error(std::io::Error::other("not UTF-8 text")))
    }

    /// The project's files, relative to the root with `/` separators, sorted: what git
    /// tracks or would track (ignored files left out), else every file outside hidden
    /// folders. At most [`MAX_LISTED_FILES`].
    pub fn list_files(&self) -> Result<Vec<String>> {
        let mut files = match self.git_files() {
            Some(files) => files,
            None => {
                let mut files = Vec::new();
                self.walk(&self.root, &mut files)?;
                files
            }
        };
        files.sort();
        files.dedup();
        files.truncate(MAX_LISTED_FILES);
        Ok(files)
    }

    /// What `git` prints for `args` run in the folder, or why it failed. Read-only commands
    /// only are ever passed; the repository's own filesystem monitor is switched off so a
    /// look at the history runs no program the repository names.
    pub fn git(&self, args: &[&str]) -> std::result::Result<String, String> {
        let output = Command::new("git")
            .arg("-C")
            .arg(&self.root)
            .args(["-c", "core.fsmonitor=false", "--no-pager"])
            .args(args)
            .output()
            .map_err(|error| format!("git could not be run: {error}"))?;
        if !output.status.success() {
            let said = String::from_utf8_lossy(&output.stderr);
            return Err(format!("git failed: {}", said.trim()));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// `git ls-files` of tracked and untracked-but-not-ignored files, or `None` when the
    /// folder is not a repository or git is not installed.
    fn git_files(&self) -> Option<Vec<String>> {
        let listed = self
            .git(&[
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ])
            .ok()?;
        Some(
            listed
                .split('\0')
                .filter(|name| !name.is_empty())
                .filter(|name| self.root.join(name).is_file())
                .map(str::to_owned)
                .collect(),
        )
    }

    fn walk(&self, folder: &Path, files: &mut Vec<String>) -> Result<()> {
        let entries = fs::read_dir(folder).map_err(|source| DreamerError::Folder {
            root: folder.to_owned(),
            source,
        })?;
        for entry in entries.flatten() {
            if files.len() >= MAX_LISTED_FILES {
                return Ok(());
            }
            let name = entry.file_name();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            let path = entry.path();
            if kind.is_dir() {
                self.walk(&path, files)?;
            } else if kind.is_file()
                && let Ok(relative) = path.strip_prefix(&self.root)
            {
                files.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
        Ok(())
    }
}
