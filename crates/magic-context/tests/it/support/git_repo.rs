//! Scratch git repositories for the end-to-end tests: the proxy's project identity is a
//! repository's root commit, and the agents expect to work inside one.

use std::path::Path;
use std::process::Command;

use super::deadline::{Bounded, QUICK};

/// Makes `repo` (its files already written) a git repository with them in one commit.
pub fn commit_all(repo: &Path) {
    for args in [
        &["init", "-q"][..],
        &["config", "user.email", "tests@example.com"],
        &["config", "user.name", "Tests"],
        &["config", "commit.gpgsign", "false"],
        &["add", "."],
        &["commit", "-qm", "initial import"],
    ] {
        let mut command = Command::new("git");
        command.args(args).current_dir(repo);
        let output = Bounded::output(&mut command, "git", QUICK);
        assert!(
            output.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
