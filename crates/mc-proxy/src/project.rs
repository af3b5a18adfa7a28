//! Which project a session works in (DESIGN §4, step 3).
//!
//! An explicit `x-magic-context-project` header wins. Otherwise the working directory the
//! client states in its prompt (see [`DIRECTORY_STATEMENTS`] for each host's wording) is
//! mapped to a stable identity: the repository's root commit where the directory is in a git
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

/// How each host states its working directory: the text before the path and the text that
/// ends it (`"\n"`: the end of the line). Taken from the hosts' own prompts
/// (`shared/CLIENTS.md`); the matching is case-sensitive, so Pi's "Current working
/// directory" is not mistaken for OpenCode's "Working directory" or the reverse.
const DIRECTORY_STATEMENTS: [(&str, &str); 4] = [
    // Claude Code, in the system prompt's environment section.
    ("Primary working directory: ", "\n"),
    // Pi, the system prompt's last line.
    ("Current working directory: ", "\n"),
    // OpenCode, the `<env>` block near the end of the system prompt.
    ("Working directory: ", "\n"),
    // Codex, `<environment_context>` in the first user message.
    ("<cwd>", "</cwd>"),
];

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
    DIRECTORY_STATEMENTS.iter().find_map(|(before, end)| {
        let rest = &text[text.find(before)? + before.len()..];
        let stated = rest.find(end).map_or(rest, |stop| &rest[..stop]);
        let line = stated.lines().next()?.trim();
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

    /// OpenCode's system prompt ends with an `<env>` block, then a skills list.
    #[test]
    fn reads_opencode_env_block() {
        let text = "You are opencode, an interactive CLI tool.\n\nYou are powered by the model named fake-model. The exact model ID is fake/fake-model\nHere is some useful information about the environment you are running in:\n<env>\n  Working directory: /home/dev/shop\n  Workspace root folder: /home/dev/shop\n  Is directory a git repo: yes\n  Platform: linux\n  Today's date: Mon Nov 30 2026\n</env>\n<skills>\n</skills>";
        assert_eq!(stated_directory(text), Some("/home/dev/shop"));
    }

    /// Codex states it in the first user message's `<environment_context>`.
    #[test]
    fn reads_codex_environment_context() {
        let text = "<environment_context>\n  <cwd>/tmp/codex run</cwd>\n  <shell>bash</shell>\n  <current_date>2026-11-30</current_date>\n  <timezone>Etc/UTC</timezone>\n  <filesystem><workspace_roots><root>/tmp/codex run</root></workspace_roots></filesystem>\n</environment_context>";
        assert_eq!(stated_directory(text), Some("/tmp/codex run"));
    }

    /// Pi's system prompt names its own install folder in docs paths, and ends with the date
    /// and the working directory.
    #[test]
    fn reads_pi_last_line() {
        let text = "You are an expert coding assistant operating inside pi, a coding agent harness.\n- Docs: /usr/lib/node_modules/@mariozechner/pi-coding-agent/README.md\nCurrent date: 2026-11-30\nCurrent working directory: /srv/work/pi-run";
        assert_eq!(stated_directory(text), Some("/srv/work/pi-run"));
    }

    /// A relative or empty statement is not a directory.
    #[test]
    fn a_relative_statement_is_ignored() {
        assert_eq!(stated_directory("Current working directory: src"), None);
        assert_eq!(stated_directory("<cwd></cwd>"), None);
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
