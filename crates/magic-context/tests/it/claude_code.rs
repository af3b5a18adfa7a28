//! The real Claude Code CLI, installed from the npm registry for end-to-end tests.
//!
//! `MC_CLAUDE_BIN` names an installed `claude` binary; otherwise the tests install
//! `@anthropic-ai/claude-code@2.1` once into the cargo target directory (the npm registry is
//! the only network these tests use). A machine without npm fails the test with a message
//! saying what to install: an end-to-end test that silently skips proves nothing.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::support::deadline::{Bounded, INSTALL};

/// The version line tests pin: the 2.1 series the proxy is tested against.
pub const PACKAGE: &str = "@anthropic-ai/claude-code@2.1";

/// Path to a runnable `claude`, installing it on first use.
pub fn binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(locate_or_install).clone()
}

fn locate_or_install() -> PathBuf {
    if let Some(path) = std::env::var_os("MC_CLAUDE_BIN") {
        return PathBuf::from(path);
    }
    let prefix = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("claude-code");
    let package = prefix.join("node_modules/@anthropic-ai/claude-code");
    let binary = package.join("bin/claude.exe");
    if !binary.is_file() {
        std::fs::create_dir_all(&prefix).unwrap();
        let mut npm = Command::new("npm");
        npm.args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .arg(PACKAGE);
        let status = Bounded::status(
            &mut npm,
            "npm (install Node.js and npm, or set MC_CLAUDE_BIN)",
            INSTALL,
        );
        assert!(status.success(), "npm install {PACKAGE} failed");
        // npm may skip the package's postinstall step, which links the native binary.
        if !binary.is_file() {
            let mut node = Command::new("node");
            node.arg(package.join("install.cjs")).current_dir(&package);
            let status = Bounded::status(&mut node, "node install.cjs", INSTALL);
            assert!(status.success(), "{PACKAGE} install.cjs failed");
        }
    }
    assert!(binary.is_file(), "no claude binary at {}", binary.display());
    binary
}
