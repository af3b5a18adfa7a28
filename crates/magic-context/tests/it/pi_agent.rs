//! The real Pi coding agent (`@mariozechner/pi-coding-agent`), installed from the npm registry
//! for end-to-end tests.
//!
//! `MC_PI_BIN` names an installed `pi`; otherwise the tests install the pinned version once
//! into the cargo target directory (the npm registry is the only network these tests use),
//! and install it again when the folder holds another version. A machine without npm fails
//! the test with a message saying what to install: an end-to-end test that silently skips
//! proves nothing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::support::deadline::{Bounded, INSTALL};

/// The package tests pin.
pub const PACKAGE: &str = "@mariozechner/pi-coding-agent";
/// The version the proxy is tested against (the one `CLIENTS.md` describes).
pub const VERSION: &str = "0.73.1";

/// Path to a runnable `pi`, installing it on first use.
pub fn binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(locate_or_install).clone()
}

fn locate_or_install() -> PathBuf {
    if let Some(path) = std::env::var_os("MC_PI_BIN") {
        return PathBuf::from(path);
    }
    let prefix = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pi-coding-agent");
    let binary = prefix.join("node_modules/.bin/pi");
    if installed_version(&prefix).as_deref() != Some(VERSION) {
        std::fs::create_dir_all(&prefix).unwrap();
        let package = format!("{PACKAGE}@{VERSION}");
        let mut npm = Command::new("npm");
        npm.args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .arg(&package);
        let status = Bounded::status(
            &mut npm,
            "npm (install Node.js and npm, or set MC_PI_BIN)",
            INSTALL,
        );
        assert!(status.success(), "npm install {package} failed");
    }
    assert_eq!(
        installed_version(&prefix).as_deref(),
        Some(VERSION),
        "{PACKAGE} under {} is not version {VERSION}",
        prefix.display()
    );
    assert!(binary.is_file(), "no pi binary at {}", binary.display());
    binary
}

/// The version of the package installed under `prefix`, from its `package.json`.
fn installed_version(prefix: &Path) -> Option<String> {
    let manifest = prefix
        .join("node_modules")
        .join(PACKAGE)
        .join("package.json");
    let text = std::fs::read_to_string(manifest).ok()?;
    let manifest: serde_json::Value = serde_json::from_str(&text).ok()?;
    Some(manifest["version"].as_str()?.to_owned())
}
