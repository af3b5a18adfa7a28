//! Which project a session works in (DESIGN §4, step 3).
//!
//! An explicit `x-magic-context-project` header wins. Otherwise the working directory the
//! client states in its prompt (see [`crate::stated_directories`] for each host's wording) is
//! mapped to a stable identity: the repository's root commit where the directory is in a git
//! repository (the same project under any path or clone), else a hash of the canonical path.
//!
//! The directory comes from the prompt, so anything may be named there. Only an existing
//! directory is looked at; `git` runs only where the repository's `HEAD` is a plain file (a
//! FIFO there once held a request and a `git` process forever), and is killed after
//! [`GIT_TIMEOUT`] whatever it waits on. Identities are memoised per directory, at most
//! [`MEMO_ENTRIES`] of them, so a client naming a new directory on every call cannot grow
//! the proxy's memory.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use mc_core::ProjectId;

use crate::headers::header_str;
use crate::stated_directories::StatedDirectories;

/// How long `git` may take to name a repository's root commit: it answers in milliseconds,
/// even on a large repository on a slow disk.
const GIT_TIMEOUT: Duration = Duration::from_secs(5);

/// Directories whose identity is remembered; past that, one is forgotten for each new one.
const MEMO_ENTRIES: usize = 1024;

/// The longest directory statement looked at: no path on Linux or macOS is longer.
const MAX_PATH_BYTES: usize = 4096;

/// The explicit project header.
pub const PROJECT_HEADER: &str = "x-magic-context-project";

/// Resolves and remembers project identities.
#[derive(Default)]
pub struct ProjectResolver {
    known: Mutex<HashMap<String, ProjectId>>,
    /// Projects identified from a folder not yet written to the store
    /// ([`Self::take_new_folders`]), at most [`MEMO_ENTRIES`].
    new_folders: Mutex<Vec<(ProjectId, String)>>,
    /// The directories recent prompt texts state.
    statements: StatedDirectories,
}

impl ProjectResolver {
    /// The project of a request from its headers and prompt texts (system, first message).
    pub fn resolve<'a>(
        &self,
        headers: &HeaderMap,
        texts: impl IntoIterator<Item = &'a str>,
    ) -> Option<ProjectId> {
        self.resolve_with_folder(headers, texts).0
    }

    /// [`Self::resolve`], with the working directory the prompt states when the project
    /// was identified from it (not from the explicit header).
    pub fn resolve_with_folder<'t>(
        &self,
        headers: &HeaderMap,
        texts: impl IntoIterator<Item = &'t str>,
    ) -> (Option<ProjectId>, Option<&'t str>) {
        if let Some(explicit) = header_str(headers, PROJECT_HEADER) {
            return (ProjectId::new(explicit).ok(), None);
        }
        let Some(directory) = texts
            .into_iter()
            .find_map(|text| self.statements.stated(text))
            .filter(|directory| directory.len() <= MAX_PATH_BYTES)
        else {
            return (None, None);
        };
        (self.identify_memoised(directory), Some(directory))
    }

    /// The identity of the project `directory` belongs to, remembered.
    fn identify_memoised(&self, directory: &str) -> Option<ProjectId> {
        if let Ok(known) = self.known.lock()
            && let Some(project) = known.get(directory)
        {
            return Some(project.clone());
        }
        // Not remembered when unknown: the directory may appear later, and a `git` that ran
        // out of time is asked again next call.
        let project = identify(Path::new(directory))?;
        if let Ok(mut new_folders) = self.new_folders.lock()
            && new_folders.len() < MEMO_ENTRIES
        {
            new_folders.push((project.clone(), directory.to_owned()));
        }
        if let Ok(mut known) = self.known.lock() {
            if known.len() >= MEMO_ENTRIES
                && let Some(evicted) = known.keys().next().cloned()
            {
                known.remove(&evicted);
            }
            known.insert(directory.to_owned(), project.clone());
        }
        Some(project)
    }
}

impl ProjectResolver {
    /// The projects identified from a folder since the last call, with their folders, for
    /// the store to keep (it names projects by folder in `status`): each folder once per
    /// process, when it is first identified.
    pub fn take_new_folders(&self) -> Vec<(ProjectId, String)> {
        self.new_folders
            .lock()
            .map(|mut new_folders| std::mem::take(&mut *new_folders))
            .unwrap_or_default()
    }
}

/// The stable identity of the project `directory` belongs to: `git:<root commit>` inside a
/// git repository, else `path:<hash of the canonical path>`; `None` when the path is not a
/// directory, or `git` did not answer in time. The command line uses it too, so
/// `--project DIR` names the project the proxy stores a session's memories under.
pub fn identify(directory: &Path) -> Option<ProjectId> {
    let canonical = directory.canonicalize().ok()?;
    if !canonical.is_dir() {
        return None;
    }
    let id = match root_commit(&canonical)? {
        Some(commit) => format!("git:{commit}"),
        None => {
            let path = canonical.to_string_lossy();
            format!("path:{}", &blake3::hash(path.as_bytes()).to_hex()[..16])
        }
    };
    ProjectId::new(id).ok()
}

/// The root commit of the repository holding `directory`: `Some(None)` when there is no
/// usable repository, `None` when `git` could not tell in time.
fn root_commit(directory: &Path) -> Option<Option<String>> {
    if !has_plain_head(directory) {
        return Some(None);
    }
    let mut child = Command::new("git")
        .arg("-C")
        .arg(directory)
        .args(["rev-list", "--max-parents=0", "HEAD"])
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    // Read on a thread of its own: a history with many roots could fill the pipe, and git
    // would wait on it while this thread waited on git.
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).map(|_| text)
    });
    let deadline = Instant::now() + GIT_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                tracing::warn!(
                    directory = %directory.display(),
                    "git did not name the repository's root commit in time; the request has no project"
                );
                return None;
            }
        }
    };
    let stdout = reader.join().ok()?.ok()?;
    if !status.success() {
        return Some(None);
    }
    Some(
        stdout
            .lines()
            .last()
            .filter(|commit| !commit.is_empty())
            .map(str::to_owned),
    )
}

/// Whether the repository `directory` is in (the nearest `.git` above it) has a `HEAD` that
/// is a regular file, or there is no `.git` at all (then `git` finds nothing quickly). A
/// FIFO, a device or a directory there would block or confuse `git`: no repository, then.
fn has_plain_head(directory: &Path) -> bool {
    for ancestor in directory.ancestors() {
        let dot_git = ancestor.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(meta) if meta.is_dir() => {
                return std::fs::metadata(dot_git.join("HEAD")).is_ok_and(|head| head.is_file());
            }
            // A worktree or submodule's `.git` file points elsewhere; git reads it.
            Ok(meta) => return meta.is_file(),
            Err(_) => continue,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_directory_hashes_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let resolver = ProjectResolver::default();
        let text = format!("Primary working directory: {}", dir.path().display());
        let project = resolver
            .resolve(&HeaderMap::new(), [text.as_str()])
            .unwrap();
        assert!(project.as_str().starts_with("path:"), "{project:?}");
        assert_eq!(
            resolver.resolve(&HeaderMap::new(), [text.as_str()]),
            Some(project)
        );
    }

    fn mkfifo(path: &Path) {
        let made = Command::new("mkfifo").arg(path).status().unwrap();
        assert!(made.success(), "mkfifo {}", path.display());
    }

    /// A repository whose `HEAD` is a FIFO: `git` would wait on it forever.
    #[test]
    fn a_fifo_head_is_no_repository_and_is_never_opened() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        mkfifo(&dir.path().join(".git/HEAD"));
        let project = identify(dir.path()).unwrap();
        assert!(project.as_str().starts_with("path:"), "{project:?}");
    }

    /// Whatever else `git` blocks on (here its config is a FIFO), it is killed in time and
    /// the request goes on without a project, which a later call may still find.
    #[test]
    fn a_git_that_hangs_is_killed_and_names_no_project() {
        let dir = tempfile::tempdir().unwrap();
        let init = Command::new("git")
            .args(["init", "-q"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(init.success());
        std::fs::remove_file(dir.path().join(".git/config")).unwrap();
        mkfifo(&dir.path().join(".git/config"));
        let started = Instant::now();
        assert_eq!(identify(dir.path()), None);
        assert!(
            started.elapsed() < GIT_TIMEOUT * 3,
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn what_is_not_a_directory_is_not_a_project() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file.txt");
        std::fs::write(&file, "x").unwrap();
        assert_eq!(identify(&file), None);
        assert_eq!(identify(&dir.path().join("missing")), None);
        let fifo = dir.path().join("pipe");
        mkfifo(&fifo);
        assert_eq!(identify(&fifo), None);
    }

    /// Ten thousand directory statements, each naming another directory: the memo keeps
    /// at most its bound, and names of directories that do not exist are not kept at all.
    #[test]
    fn the_memo_is_bounded() {
        let resolver = ProjectResolver::default();
        let long = "x".repeat(50_000);
        for n in 0..10_000 {
            let text = format!("Primary working directory: /nonexistent/{n}/{long}");
            assert_eq!(resolver.resolve(&HeaderMap::new(), [text.as_str()]), None);
        }
        assert_eq!(resolver.known.lock().unwrap().len(), 0);
        let dir = tempfile::tempdir().unwrap();
        for n in 0..MEMO_ENTRIES + 50 {
            let sub = dir.path().join(n.to_string());
            std::fs::create_dir(&sub).unwrap();
            let text = format!("Primary working directory: {}", sub.display());
            assert!(
                resolver
                    .resolve(&HeaderMap::new(), [text.as_str()])
                    .is_some()
            );
        }
        assert_eq!(resolver.known.lock().unwrap().len(), MEMO_ENTRIES);
    }
}
