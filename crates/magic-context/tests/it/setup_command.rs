//! The command `setup` registers as a host's MCP server: the installed `magic-context` on
//! PATH when `setup` is that binary, else this binary with a warning when it lives in a
//! build folder (where `cargo clean` would remove it and the host's tools would fail
//! silently).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::Machine;
use crate::support::deadline::{Bounded, QUICK};

/// The command `~/.claude.json` registers for the magic-context MCP server.
fn registered_command(machine: &Machine) -> String {
    let text = std::fs::read_to_string(machine.path("home/.claude.json")).unwrap();
    let config: Value = serde_json::from_str(&text).unwrap();
    config["mcpServers"]["magic-context"]["command"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn setup_from_a_binary_inside_a_build_folder_warns_and_says_how_to_install() {
    let machine = Machine::fresh();
    // The binary under test is cargo's, in the target folder.
    let run = machine.run(&["setup", "claude-code"], &[]).success();
    let built = std::fs::canonicalize(env!("CARGO_BIN_EXE_magic-context")).unwrap();
    assert!(
        run.stderr.starts_with(&format!(
            "warning: {} is inside the build folder ",
            built.display()
        )),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("Install it with `cargo install --path crates/magic-context --locked`"),
        "{}",
        run.stderr
    );
    assert_eq!(registered_command(&machine), built.display().to_string());
}

#[test]
fn setup_from_the_installed_binary_registers_it_without_a_warning() {
    let machine = Machine::fresh();
    let bin = machine.path("bin");
    std::fs::create_dir(&bin).unwrap();
    let installed = bin.join("magic-context");
    install_copy(Path::new(env!("CARGO_BIN_EXE_magic-context")), &installed);
    let mut command = Command::new(&installed);
    command
        .args(["setup", "claude-code"])
        .current_dir(machine.path("work"))
        .env_clear()
        .env("HOME", machine.path("home"))
        .env("XDG_CONFIG_HOME", machine.path("xdg"))
        .env("PATH", std::env::join_paths([&bin]).unwrap());
    let output = Bounded::output(&mut command, "installed magic-context setup", QUICK);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(stderr, "", "no warning for an installed binary");
    assert_eq!(
        registered_command(&machine),
        installed.display().to_string()
    );
}

/// Puts the binary at `to` outside any build folder: a hard link when the file system allows
/// one (the debug binary is large), else a copy.
fn install_copy(from: &Path, to: &Path) {
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).unwrap();
    }
}

/// With `compaction.enabled: false` the host's own compaction manages the window, so setup
/// leaves it on: the base URL and the MCP server are written, `autoCompactEnabled` is not.
#[test]
fn with_compaction_off_setup_leaves_the_hosts_compaction_on() {
    let machine = Machine::fresh();
    let config = machine.path("home/magic-context.jsonc");
    std::fs::write(&config, r#"{"compaction": {"enabled": false}}"#).unwrap();
    machine
        .run(
            &["setup", "claude-code"],
            &[("MAGIC_CONTEXT_CONFIG", config.as_os_str())],
        )
        .success();
    let text = std::fs::read_to_string(machine.path("home/.claude/settings.json")).unwrap();
    let settings: Value = serde_json::from_str(&text).unwrap();
    assert!(
        settings["env"]["ANTHROPIC_BASE_URL"].is_string(),
        "{settings}"
    );
    assert_eq!(settings.get("autoCompactEnabled"), None, "{settings}");
    assert!(!registered_command(&machine).is_empty());
}
