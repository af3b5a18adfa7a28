//! A coding-agent CLI installed from the npm registry for end-to-end tests, pinned to one
//! version.
//!
//! An environment variable may name an installed binary; otherwise the client is installed
//! once into the cargo target directory (the npm registry is the only network these tests
//! use). A machine without npm fails the test with a message saying what to install: an
//! end-to-end test that silently skips proves nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::deadline::{Bounded, INSTALL, QUICK};

/// One pinned npm client.
pub struct NpmClient {
    /// The npm package.
    pub package: &'static str,
    /// The pinned version.
    pub version: &'static str,
    /// The command the package installs under `node_modules/.bin`.
    pub bin: &'static str,
    /// The environment variable that may name an installed binary instead.
    pub env_var: &'static str,
}

impl NpmClient {
    /// Path to a runnable binary: the one `env_var` names, else the one in the target
    /// directory, installed first if it is missing or not the pinned version.
    pub fn locate_or_install(&self) -> PathBuf {
        if let Some(path) = std::env::var_os(self.env_var) {
            return PathBuf::from(path);
        }
        let prefix = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("{}-{}", self.bin, self.version));
        // The package's node launcher, which runs its platform package's binary.
        let binary = prefix.join("node_modules/.bin").join(self.bin);
        if !self.runs(&binary) {
            std::fs::create_dir_all(&prefix).unwrap();
            let package = format!("{}@{}", self.package, self.version);
            let mut npm = Command::new("npm");
            npm.args(["install", "--no-audit", "--no-fund", "--prefix"])
                .arg(&prefix)
                .arg(&package);
            let name = format!("npm (install Node.js and npm, or set {})", self.env_var);
            let status = Bounded::status(&mut npm, &name, INSTALL);
            assert!(status.success(), "npm install {package} failed");
        }
        assert!(
            self.runs(&binary),
            "no runnable {} {} at {}",
            self.bin,
            self.version,
            binary.display()
        );
        binary
    }

    /// Whether `BIN --version` at `binary` runs and names the pinned version.
    fn runs(&self, binary: &Path) -> bool {
        if !binary.is_file() {
            return false;
        }
        let mut command = Command::new(binary);
        command.arg("--version");
        let output = Bounded::output(&mut command, &format!("{} --version", self.bin), QUICK);
        output.status.success() && String::from_utf8_lossy(&output.stdout).contains(self.version)
    }
}
