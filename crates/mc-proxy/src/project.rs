//! Which project a session works in (DESIGN §4, step 3).
//!
//! An explicit `x-magic-context-project` header wins. Otherwise the working directory the
//! client states in its prompt (Claude Code writes "Primary working directory: …") is mapped
//! to a stable identity: the repository's root commit where the directory is in a git
//! repository (the same project under any path or clone), else a hash of the canonical path.
//! Identities are memoised per directory: the lookup runs `git` once.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use axum::http::HeaderMap;
use mc_core::ProjectId;

use crate::headers::header_str;

/// The explicit project header.
pub const PROJECT_HEADER: &str = "x-magic-context-project";

/// Phrases after which clients state their working directory.
const DIRECTORY_MARKERS: [&str; 2] = ["Primary working directory: ", "Working directory: "];

/// Resolves and remembers project identities.
#[derive(Default)]
pub struct ProjectResolver {
    known: Mutex<HashMap<String, Option<ProjectId>>>,
}

impl ProjectResolver {
    /// The project of a request from its headers and prompt texts (system, first message).
    pub fn resolve<'a>(
        &self,
        headers: &HeaderMap,
        texts: impl IntoIterator<Item = &'a str>,
    ) -> Option<ProjectId> {
        if let Some(explicit) = header_str(headers, PROJECT_HEADER) {
            return ProjectId::new(explicit).ok();
        }
        let directory = texts.into_iter().find_map(stated_directory)?;
        if let Ok(known) = self.known.lock()
            && let Some(project) = known.get(directory)
        {
            return project.clone();
        }
        let project = identify(Path::new(directory));
        if let Ok(mut known) = self.known.lock() {
            known.insert(directory.to_owned(), project.clone());
        }
        project
    }
}

/// The directory a prompt text states, if any.
fn stated_directory(text: &str) -> Option<&str> {
    DIRECTORY_MARKERS.iter().find_map(|marker| {
        let start = text.find(marker)? + marker.len();
        let line = text[start..].lines().next()?.trim();
        line.starts_with('/').then_some(line)
    })
}

/// The stable identity of the project `directory` belongs to: `git:<root commit>` inside a
/// git repository, else `path:<hash of the canonical path>`; `None` when the directory does
/// not exist. The command line uses it too, so `--project DIR` names the project the proxy
/// stores a session's memories under.
pub fn identify(directory: &Path) -> Option<ProjectId> {
    let canonical = directory.canonicalize().ok()?;
    let root_commit = Command::new("git")
        .arg("-C")
        .arg(&canonical)
        .args(["rev-list", "--max-parents=0", "HEAD"])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .and_then(|stdout| stdout.lines().last().map(str::to_owned));
    let id = match root_commit {
        Some(commit) if !commit.is_empty() => format!("git:{commit}"),
        _ => {
            let path = canonical.to_string_lossy();
            format!("path:{}", &blake3::hash(path.as_bytes()).to_hex()[..16])
        }
    };
    ProjectId::new(id).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_claude_code_environment_line() {
        let text = "Here is useful information about the environment:\n<env>\nPrimary working directory: /tmp/some where\nIs directory a git repo: Yes\n</env>";
        assert_eq!(stated_directory(text), Some("/tmp/some where"));
        assert_eq!(stated_directory("no directory here"), None);
    }

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
}
