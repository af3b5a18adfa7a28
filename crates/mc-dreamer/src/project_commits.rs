//! The commits made in a project's folder since a time, read with `git log`: what a smart
//! note's condition is checked against ("when a commit mentions the migration", "when
//! Cargo.lock changes").
//!
//! Read-only, like everything the dreamer does in a folder, and bounded: at most
//! [`MAX_COMMITS`] of the newest commits. A folder that is not a repository (or a machine
//! without git) has no commits, which leaves such conditions pending rather than failing.

use std::process::Command;

use crate::project_folder::ProjectFolder;

/// Most commits read per run: months of a busy project's history.
pub const MAX_COMMITS: usize = 500;

/// One commit as the checks read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectCommit {
    /// The committer's time, unix milliseconds.
    pub committed_ms: i64,
    /// The first line of the message.
    pub subject: String,
    /// The rest of the message.
    pub body: String,
    /// The files it touched, relative to the root.
    pub files: Vec<String>,
}

/// Separates commits in git's output.
const RECORD: char = '\u{1e}';
/// Separates a commit's fields.
const FIELD: char = '\u{1f}';

/// The commits of `folder`'s checked-out history made at or after `since_ms`, newest first.
pub fn commits_since(folder: &ProjectFolder, since_ms: i64) -> Vec<ProjectCommit> {
    let since_secs = since_ms.div_euclid(1000);
    let output = Command::new("git")
        .arg("-C")
        .arg(folder.root())
        .args([
            "log",
            "--no-color",
            "--name-only",
            &format!("--max-count={MAX_COMMITS}"),
            &format!("--since=@{since_secs}"),
            "--format=%x1e%ct%x1f%s%x1f%b%x1f",
        ])
        .output();
    let Ok(output) = output else {
        return Vec::new();
    };
    if !output.status.success() {
        return Vec::new();
    }
    parse_log(&String::from_utf8_lossy(&output.stdout))
        .into_iter()
        .filter(|commit| commit.committed_ms >= since_ms)
        .collect()
}

/// Reads `git log` output in the format [`commits_since`] asks for.
fn parse_log(log: &str) -> Vec<ProjectCommit> {
    log.split(RECORD)
        .filter_map(|record| {
            let mut fields = record.splitn(4, FIELD);
            let committed_secs: i64 = fields.next()?.trim().parse().ok()?;
            let subject = fields.next()?.trim().to_owned();
            let body = fields.next()?.trim().to_owned();
            let files = fields
                .next()
                .unwrap_or_default()
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty())
                .map(str::to_owned)
                .collect();
            Some(ProjectCommit {
                committed_ms: committed_secs.saturating_mul(1000),
                subject,
                body,
                files,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_reads_into_commits_with_their_files() {
        let log = "\u{1e}1796504400\u{1f}Move CI config\u{1f}Because.\nTwo lines.\u{1f}\n\n.github/ci.yml\nMakefile\n\
                   \u{1e}1796400000\u{1f}Empty\u{1f}\u{1f}\n";
        assert_eq!(
            parse_log(log),
            [
                ProjectCommit {
                    committed_ms: 1_796_504_400_000,
                    subject: "Move CI config".into(),
                    body: "Because.\nTwo lines.".into(),
                    files: vec![".github/ci.yml".into(), "Makefile".into()],
                },
                ProjectCommit {
                    committed_ms: 1_796_400_000_000,
                    subject: "Empty".into(),
                    body: String::new(),
                    files: Vec::new(),
                },
            ]
        );
        assert!(parse_log("not a log").is_empty());
    }
}
