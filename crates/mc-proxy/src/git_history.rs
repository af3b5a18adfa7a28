//! A project's recent git history, read for search: the commits of HEAD from the last year,
//! at most [`MAX_COMMITS`], newest first.
//!
//! Fields are separated by the ASCII unit separator and commits by the record separator,
//! which commit messages do not contain, so any message parses.

use std::path::Path;
use std::process::Command;

use mc_store::Commit;

/// The most commits read.
pub const MAX_COMMITS: usize = 2_000;

/// How far back commits are read.
const SINCE: &str = "1 year ago";

const FIELD: char = '\u{1f}';
const RECORD: char = '\u{1e}';

/// The commits of `directory`'s repository, or why they cannot be read (not a repository,
/// no git, an empty history reads as no commits).
pub fn read_commits(directory: &Path) -> Result<Vec<Commit>, String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(directory)
        .args([
            "log",
            &format!("--since={SINCE}"),
            &format!("--max-count={MAX_COMMITS}"),
            "--format=%H%x1f%an%x1f%ct%x1f%s%x1f%b%x1e",
        ])
        .output()
        .map_err(|error| format!("cannot run git: {error}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        if stderr.contains("does not have any commits") {
            return Ok(Vec::new());
        }
        return Err(format!("git log failed: {}", stderr.trim()));
    }
    Ok(parse_log(&String::from_utf8_lossy(&output.stdout)))
}

fn parse_log(log: &str) -> Vec<Commit> {
    log.split(RECORD)
        .filter_map(|record| {
            let mut fields = record.trim_start_matches('\n').split(FIELD);
            let sha = fields.next()?.trim();
            let author = fields.next()?;
            let seconds: i64 = fields.next()?.trim().parse().ok()?;
            let subject = fields.next()?;
            let body = fields.next().unwrap_or_default();
            (!sha.is_empty()).then(|| Commit {
                sha: sha.to_owned(),
                author: author.to_owned(),
                committed_ms: seconds.saturating_mul(1000),
                subject: subject.to_owned(),
                body: body.trim().to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_with_multiline_bodies_parse() {
        let log = "abc\u{1f}Ann\u{1f}1700000000\u{1f}Fix retry\u{1f}Line one\nLine two\n\u{1e}\n\
                   def\u{1f}Bob\u{1f}1690000000\u{1f}Add cache\u{1f}\u{1e}\n";
        let commits = parse_log(log);
        assert_eq!(commits.len(), 2);
        assert_eq!(commits[0].sha, "abc");
        assert_eq!(commits[0].body, "Line one\nLine two");
        assert_eq!(commits[0].committed_ms, 1_700_000_000_000);
        assert_eq!(commits[1].subject, "Add cache");
        assert_eq!(commits[1].body, "");
    }

    #[test]
    fn a_directory_outside_any_repository_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_commits(dir.path()).is_err());
    }
}
