//! The real Codex CLI, installed from the npm registry for end-to-end tests.
//!
//! `MC_CODEX_BIN` names an installed `codex`; otherwise the tests install the pinned
//! `@openai/codex` once into the cargo target directory (the npm registry is the only network
//! these tests use). A machine without npm fails the test with a message saying what to
//! install: an end-to-end test that silently skips proves nothing.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The version tests pin: the release whose wire `../shared/CLIENTS.md` records.
pub const VERSION: &str = "0.171.0";

/// Path to a runnable `codex`, installing it on first use.
pub fn binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(locate_or_install).clone()
}

fn locate_or_install() -> PathBuf {
    if let Some(path) = std::env::var_os("MC_CODEX_BIN") {
        return PathBuf::from(path);
    }
    let prefix = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("codex-{VERSION}"));
    // The package's node launcher, which runs the platform package's native binary.
    let binary = prefix.join("node_modules/.bin/codex");
    if !runs(&binary) {
        std::fs::create_dir_all(&prefix).unwrap();
        let package = format!("@openai/codex@{VERSION}");
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .arg(&package)
            .status()
            .unwrap_or_else(|error| {
                panic!("cannot run npm ({error}); install Node.js and npm, or set MC_CODEX_BIN")
            });
        assert!(status.success(), "npm install {package} failed");
    }
    assert!(runs(&binary), "no runnable codex at {}", binary.display());
    binary
}

/// Whether `codex --version` at `binary` runs and names the pinned version.
fn runs(binary: &PathBuf) -> bool {
    Command::new(binary)
        .arg("--version")
        .output()
        .is_ok_and(|output| {
            output.status.success() && String::from_utf8_lossy(&output.stdout).contains(VERSION)
        })
}
