//! The command `setup` registers as a host's MCP server: the `magic-context` a user would
//! type, not wherever this copy happens to live.
//!
//! A host runs the command it was given long after `setup`, so it must name a binary that
//! stays put. The `magic-context` found on PATH is that binary when it is this same file (an
//! installed copy, e.g. `~/.cargo/bin/magic-context`). A binary inside a cargo build folder
//! is not: `cargo clean` or a rebuild of another version removes or replaces it, and the host's
//! tools then fail silently, so `setup` says so and how to install.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::agent_process::find_program;

/// How to install the binary, as the README gives it.
pub const INSTALL_HINT: &str = "cargo install --path crates/magic-context --locked";

/// The command to register, and what the user should know about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpCommand {
    /// The binary's path as the host will run it.
    pub command: PathBuf,
    /// Why that path may not last, and what to do, when it may not.
    pub warning: Option<String>,
}

/// The command for this binary at `exe`, given the `PATH` value `path`.
pub fn choose(exe: &Path, path: Option<&OsStr>) -> McpCommand {
    let on_path = find_program(OsStr::new("magic-context"), path);
    let command = match &on_path {
        Some(found) if is_same_file(found, exe) => found.clone(),
        _ => exe.to_path_buf(),
    };
    let warning = build_folder_of(&command).map(|folder| {
        let other = match &on_path {
            Some(found) if *found != command => format!(
                " (the magic-context on PATH, {}, is another binary; run its `setup` to register it instead)",
                found.display()
            ),
            _ => String::new(),
        };
        format!(
            "{} is inside the build folder {}; a `cargo clean` or another build will break the host's MCP tools. Install it with `{INSTALL_HINT}` and run `magic-context setup` again{other}",
            command.display(),
            folder.display()
        )
    });
    McpCommand { command, warning }
}

/// Whether two paths name the same file (hard links included).
#[cfg(unix)]
fn is_same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn is_same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The cargo build folder `binary` lies in, if any: the nearest folder above it that cargo
/// marked with `CACHEDIR.TAG`, or a `target` folder beside a `Cargo.toml`.
fn build_folder_of(binary: &Path) -> Option<PathBuf> {
    let resolved = std::fs::canonicalize(binary).unwrap_or_else(|_| binary.to_path_buf());
    resolved.ancestors().skip(1).find_map(|folder| {
        let tagged = folder.join("CACHEDIR.TAG").is_file();
        let target_of_a_crate = folder.file_name() == Some(OsStr::new("target"))
            && folder
                .parent()
                .is_some_and(|parent| parent.join("Cargo.toml").is_file());
        (tagged || target_of_a_crate).then(|| folder.to_path_buf())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn executable(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    #[test]
    fn an_installed_copy_on_path_is_registered_without_a_warning() {
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("bin");
        let installed = bin.join("magic-context");
        executable(&installed);
        let path = std::env::join_paths([&bin]).unwrap();
        assert_eq!(
            choose(&installed, Some(&path)),
            McpCommand {
                command: installed.clone(),
                warning: None
            }
        );
        // The same file reached through another name (a hard link) is registered as on PATH.
        let linked = root.path().join("elsewhere-magic-context");
        std::fs::hard_link(&installed, &linked).unwrap();
        assert_eq!(choose(&linked, Some(&path)).command, installed);
    }

    #[test]
    fn a_binary_in_a_build_folder_is_registered_with_a_warning() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("Cargo.toml"), "[workspace]\n").unwrap();
        let built = root.path().join("target/debug/magic-context");
        executable(&built);
        let other_bin = root.path().join("bin");
        executable(&other_bin.join("magic-context"));
        for path in [None, Some(std::env::join_paths([&other_bin]).unwrap())] {
            let chosen = choose(&built, path.as_deref());
            assert_eq!(chosen.command, built);
            let warning = chosen.warning.unwrap();
            assert!(warning.contains(INSTALL_HINT), "{warning}");
            assert!(
                warning.contains(&format!(
                    "inside the build folder {}",
                    std::fs::canonicalize(root.path().join("target"))
                        .unwrap()
                        .display()
                )),
                "{warning}"
            );
            assert_eq!(
                warning.contains("is another binary"),
                path.is_some(),
                "{warning}"
            );
        }
    }
}
