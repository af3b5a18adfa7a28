//! The real Claude Code CLI configured by `magic-context setup claude-code` alone (no
//! variable pointing it anywhere), and started by `magic-context run -- claude`: both reach
//! `magic-context sim` through a proxy that manages the session, offline.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

use crate::claude_code;
use crate::support::Machine;
use crate::support::deadline::{Bounded, CLIENT};
use crate::support::servers::Server;

const SCRIPT: &str = r#"{"turns": [{"content": [{"type": "text", "text": "Hello through the proxy."}]}],
 "final_text": "Nothing more to do."}"#;

/// The variables Claude Code runs with: a dummy key and no traffic besides the model calls;
/// nothing names a base URL.
fn claude_env(machine: &Machine) -> Vec<(&'static str, std::ffi::OsString)> {
    vec![
        ("PATH", std::env::var_os("PATH").unwrap_or_default()),
        ("HOME", machine.path("home").into_os_string()),
        ("XDG_CONFIG_HOME", machine.path("xdg").into_os_string()),
        ("ANTHROPIC_API_KEY", "sk-ant-dummy-key-for-tests".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ("DISABLE_AUTOUPDATER", "1".into()),
        ("IS_SANDBOX", "1".into()),
    ]
}

fn run_program(
    machine: &Machine,
    program: &Path,
    args: &[&str],
    extra: &[(&str, &OsStr)],
) -> Output {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(machine.path("work"))
        .env_clear()
        .envs(claude_env(machine));
    for (name, value) in extra {
        command.env(name, value);
    }
    let name = format!("{} {}", program.display(), args.join(" "));
    Bounded::output(&mut command, &name, CLIENT)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Sessions in the store under `data_dir`, as `doctor` counts them.
fn stored_sessions(machine: &Machine, data_dir: &Path) -> u64 {
    let report = machine
        .run(
            &["doctor", "--json"],
            &[("MAGIC_CONTEXT_DATA_DIR", data_dir.as_os_str())],
        )
        .success()
        .json();
    report["store"]["sessions"].as_u64().unwrap()
}

#[test]
fn claude_code_reads_the_config_setup_writes() {
    let machine = Machine::fresh();
    let script = machine.path("script.json");
    std::fs::write(&script, SCRIPT).unwrap();
    let sim = Server::sim(&script, 200_000, 1.0);
    let data_dir = machine.path("data");
    let serve = Server::serve(&machine, &sim.base_url, &data_dir, 200_000);
    machine
        .run(
            &["setup", "claude-code", "--proxy-url", &serve.base_url],
            &[],
        )
        .success();

    let output = run_program(
        &machine,
        &claude_code::binary(),
        &["-p", "say hello", "--dangerously-skip-permissions"],
        &[],
    );
    assert!(
        output.status.success(),
        "claude failed: {}\n{}\n{}",
        text(&output.stderr),
        sim.stderr(),
        serve.stderr()
    );
    assert!(
        text(&output.stdout).contains("Hello through the proxy."),
        "{}",
        text(&output.stdout)
    );
    // The call went through the proxy, which stored the session, to the simulator.
    assert!(!sim.ledger().is_empty());
    assert_eq!(
        stored_sessions(&machine, &data_dir),
        1,
        "{}",
        serve.stderr()
    );

    // Claude Code finds the MCP server in its user config and connects to it.
    let listed = run_program(&machine, &claude_code::binary(), &["mcp", "list"], &[]);
    let listed_text = text(&listed.stdout);
    assert!(
        listed_text.contains("magic-context:") && listed_text.contains("Connected"),
        "{listed_text}\n{}",
        text(&listed.stderr)
    );

    let report = machine.run(&["doctor", "--json"], &[]).success().json();
    assert_eq!(report["hosts"][0]["host"], "claude-code");
    assert_eq!(report["hosts"][0]["ok"], true, "{report:#}");

    // Claude Code rewrote its global config as it ran; undo keeps its keys, drops ours,
    // and removes the settings file setup created.
    machine
        .run(&["setup", "claude-code", "--undo"], &[])
        .success();
    let global: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(machine.path("home/.claude.json")).unwrap())
            .unwrap();
    assert!(global.get("mcpServers").is_none(), "{global:#}");
    assert!(
        global.get("userID").is_some(),
        "Claude Code's own keys stay: {global:#}"
    );
    assert!(!machine.path("home/.claude/settings.json").exists());
}

#[test]
fn run_starts_a_proxy_for_claude_code() {
    let machine = Machine::fresh();
    let script = machine.path("script.json");
    std::fs::write(&script, SCRIPT).unwrap();
    let sim = Server::sim(&script, 200_000, 1.0);
    std::fs::create_dir_all(machine.user_file().parent().unwrap()).unwrap();
    std::fs::write(
        machine.user_file(),
        format!(
            r#"{{ "proxy": {{ "upstream_anthropic": "{}" }} }}"#,
            sim.base_url
        ),
    )
    .unwrap();
    let data_dir = machine.path("data");
    let claude = claude_code::binary();
    let output = run_program(
        &machine,
        Path::new(env!("CARGO_BIN_EXE_magic-context")),
        &[
            "run",
            "--",
            claude.to_str().unwrap(),
            "-p",
            "say hello",
            "--dangerously-skip-permissions",
        ],
        &[("MAGIC_CONTEXT_DATA_DIR", data_dir.as_os_str())],
    );
    assert!(
        output.status.success(),
        "run failed: {}\n{}",
        text(&output.stderr),
        sim.stderr()
    );
    assert!(
        text(&output.stdout).contains("Hello through the proxy."),
        "{}",
        text(&output.stdout)
    );
    assert!(!sim.ledger().is_empty());
    assert_eq!(stored_sessions(&machine, &data_dir), 1);
}
