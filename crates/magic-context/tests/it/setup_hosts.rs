//! `magic-context setup <host>` on a scratch HOME: the keys each host reads are written and
//! every other byte of meaning is kept (API keys included), a second run changes nothing,
//! `--dry-run` prints a diff and writes nothing, `--undo` restores byte for byte and removes
//! what `setup` created, and `doctor` checks what was set up.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::Machine;
use crate::support::servers::Server;

const PROXY: &str = "http://127.0.0.1:4141";

/// Every file under the machine's root, except the data directory (where `setup` keeps
/// its record) and the working directory.
fn snapshot(machine: &Machine) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(root).unwrap().to_path_buf();
            if relative.starts_with("home/.local/share/magic-context")
                || relative.starts_with("work")
            {
                continue;
            }
            if path.is_dir() {
                walk(&path, root, out);
            } else {
                out.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(machine.root.path(), machine.root.path(), &mut out);
    out
}

fn write(machine: &Machine, relative: &str, text: &str) {
    let path = machine.path(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read_json(machine: &Machine, relative: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(machine.path(relative)).unwrap()).unwrap()
}

fn keys(value: &Value) -> Vec<&str> {
    value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

/// Runs dry-run, setup and setup again, checking what each may change; returns the files
/// before and after.
fn set_up(
    machine: &Machine,
    host: &str,
    env: &[(&str, &OsStr)],
) -> (BTreeMap<PathBuf, Vec<u8>>, BTreeMap<PathBuf, Vec<u8>>) {
    let before = snapshot(machine);
    let dry = machine.run(&["setup", host, "--dry-run"], env).success();
    assert!(dry.stdout.contains("\n+++ "), "{}", dry.stdout);
    assert!(
        !dry.stdout.contains("keep-this-key"),
        "secrets are masked: {}",
        dry.stdout
    );
    assert_eq!(snapshot(machine), before, "--dry-run wrote nothing");
    assert!(
        !machine
            .path("home/.local/share/magic-context/setup")
            .exists()
    );

    let first = machine.run(&["setup", host], env).success();
    assert!(
        first
            .stdout
            .contains(&format!("{host} now goes through {PROXY}")),
        "{}",
        first.stdout
    );
    let after = snapshot(machine);
    assert_ne!(after, before);
    for (path, bytes) in &before {
        let backup = PathBuf::from(format!("{}.magic-context-backup", path.display()));
        if after.get(path) != Some(bytes) {
            assert_eq!(
                after.get(&backup),
                Some(bytes),
                "{} was backed up",
                path.display()
            );
        }
    }

    let second = machine.run(&["setup", host], env).success();
    assert!(
        second.stdout.contains("already set up"),
        "{}",
        second.stdout
    );
    assert_eq!(snapshot(machine), after, "a second run changes nothing");
    (before, after)
}

/// `--undo` (after a dry run that writes nothing) puts every file back as it was.
fn undo(
    machine: &Machine,
    host: &str,
    env: &[(&str, &OsStr)],
    before: &BTreeMap<PathBuf, Vec<u8>>,
) {
    let set = snapshot(machine);
    let dry = machine
        .run(&["setup", host, "--undo", "--dry-run"], env)
        .success();
    assert!(dry.stdout.contains("\n+++ "), "{}", dry.stdout);
    assert_eq!(snapshot(machine), set, "--undo --dry-run wrote nothing");
    machine.run(&["setup", host, "--undo"], env).success();
    assert_eq!(&snapshot(machine), before, "undo restores byte for byte");
    let again = machine.run(&["setup", host, "--undo"], env).success();
    assert!(again.stdout.contains("nothing to undo"), "{}", again.stdout);
}

fn binary() -> String {
    env!("CARGO_BIN_EXE_magic-context").to_owned()
}

#[test]
fn claude_code_gets_its_base_url_mcp_server_and_compaction_off() {
    let machine = Machine::fresh();
    write(
        &machine,
        "home/.claude/settings.json",
        "{\n    \"model\": \"opus\",\n    \"env\": {\n        \"ANTHROPIC_API_KEY\": \"keep-this-key\"\n    },\n    \"permissions\": {\"allow\": [\"Bash(ls)\"]}\n}\n",
    );
    write(
        &machine,
        "home/.claude.json",
        r#"{"numStartups": 5, "primaryApiKey": "keep-this-key", "mcpServers": {"other": {"type": "stdio", "command": "other-mcp"}}}"#,
    );
    let (before, _) = set_up(&machine, "claude-code", &[]);

    let settings = read_json(&machine, "home/.claude/settings.json");
    assert_eq!(
        keys(&settings),
        ["model", "env", "permissions", "autoCompactEnabled"]
    );
    assert_eq!(
        settings["env"],
        json!({"ANTHROPIC_API_KEY": "keep-this-key", "ANTHROPIC_BASE_URL": PROXY})
    );
    assert_eq!(settings["autoCompactEnabled"], false);
    assert_eq!(settings["permissions"], json!({"allow": ["Bash(ls)"]}));
    let text = std::fs::read_to_string(machine.path("home/.claude/settings.json")).unwrap();
    assert!(
        text.contains("\n    \"model\""),
        "the file's own indentation is kept:\n{text}"
    );

    let global = read_json(&machine, "home/.claude.json");
    assert_eq!(
        keys(&global),
        ["numStartups", "primaryApiKey", "mcpServers"]
    );
    assert_eq!(global["primaryApiKey"], "keep-this-key");
    assert_eq!(
        global["mcpServers"],
        json!({
            "other": {"type": "stdio", "command": "other-mcp"},
            "magic-context": {"type": "stdio", "command": binary(), "args": ["mcp"], "env": {}}
        })
    );
    undo(&machine, "claude-code", &[], &before);
}

#[test]
fn claude_config_dir_moves_both_files_and_undo_removes_what_setup_created() {
    let machine = Machine::fresh();
    let dir = machine.path("claude-dir");
    let env = [("CLAUDE_CONFIG_DIR", dir.as_os_str())];
    let (before, after) = set_up(&machine, "claude-code", &env);
    assert!(before.is_empty(), "{before:?}");
    let created: Vec<&PathBuf> = after.keys().collect();
    assert_eq!(
        created,
        [
            Path::new("claude-dir/.claude.json"),
            Path::new("claude-dir/settings.json")
        ]
    );
    assert_eq!(
        read_json(&machine, "claude-dir/settings.json")["env"]["ANTHROPIC_BASE_URL"],
        PROXY
    );
    undo(&machine, "claude-code", &env, &before);
    assert!(!dir.exists(), "undo removes the folder setup created");
}

/// `setup` creates `~/.claude/` to hold `settings.json` on a machine without it; `--undo`
/// removes it again, but not once something else lives there.
#[test]
fn undo_removes_the_folders_setup_created_while_they_are_empty() {
    let machine = Machine::fresh();
    let claude_dir = machine.path("home/.claude");
    machine.run(&["setup", "claude-code"], &[]).success();
    assert!(claude_dir.join("settings.json").is_file());
    machine
        .run(&["setup", "claude-code", "--undo"], &[])
        .success();
    assert!(!claude_dir.exists(), "an empty ~/.claude/ is left behind");
    assert!(machine.path("home").is_dir(), "HOME itself stays");

    machine.run(&["setup", "claude-code"], &[]).success();
    write(&machine, "home/.claude/history.jsonl", "{}\n");
    machine
        .run(&["setup", "claude-code", "--undo"], &[])
        .success();
    assert!(!claude_dir.join("settings.json").exists());
    assert!(
        claude_dir.join("history.jsonl").is_file(),
        "the host's own file stays, and its folder with it"
    );
}

#[test]
fn undo_keeps_what_the_host_changed_since_and_reverts_only_our_keys() {
    let machine = Machine::fresh();
    write(
        &machine,
        "home/.claude.json",
        "{\n  \"numStartups\": 5,\n  \"mcpServers\": {}\n}\n",
    );
    let (before, _) = set_up(&machine, "claude-code", &[]);
    // Claude Code rewrites its global config as it runs.
    let mut global = read_json(&machine, "home/.claude.json");
    global["numStartups"] = json!(6);
    global["tipsHistory"] = json!({"new-tip": 1});
    write(
        &machine,
        "home/.claude.json",
        &serde_json::to_string_pretty(&global).unwrap(),
    );

    let run = machine
        .run(&["setup", "claude-code", "--undo"], &[])
        .success();
    assert!(
        run.stdout.contains("reverted the keys setup wrote"),
        "{}",
        run.stdout
    );
    assert_eq!(
        read_json(&machine, "home/.claude.json"),
        json!({"numStartups": 6, "mcpServers": {}, "tipsHistory": {"new-tip": 1}})
    );
    // The settings file was not touched by the host: it is restored byte for byte (here:
    // removed, since setup created it).
    let after = snapshot(&machine);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
}

#[test]
fn opencode_gets_provider_urls_its_mcp_server_and_compaction_off() {
    let machine = Machine::fresh();
    write(
        &machine,
        "xdg/opencode/opencode.json",
        "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  \"model\": \"anthropic/claude-sonnet-4-5\",\n  \"provider\": {\n    \"anthropic\": {\"options\": {\"apiKey\": \"keep-this-key\"}}\n  }\n}\n",
    );
    let (before, _) = set_up(&machine, "opencode", &[]);
    let config = read_json(&machine, "xdg/opencode/opencode.json");
    assert_eq!(
        keys(&config),
        ["$schema", "model", "provider", "mcp", "compaction"]
    );
    assert_eq!(
        config["provider"],
        json!({
            "anthropic": {"options": {"apiKey": "keep-this-key", "baseURL": format!("{PROXY}/v1")}},
            "openai": {"options": {"baseURL": format!("{PROXY}/v1")}}
        })
    );
    assert_eq!(
        config["mcp"]["magic-context"],
        json!({"type": "local", "command": [binary(), "mcp"], "enabled": true})
    );
    assert_eq!(config["compaction"], json!({"auto": false}));
    undo(&machine, "opencode", &[], &before);
}

#[test]
fn codex_config_keeps_its_comments_and_gets_the_base_url_and_mcp_server() {
    let machine = Machine::fresh();
    let codex_home = machine.path("codex-home");
    let env = [("CODEX_HOME", codex_home.as_os_str())];
    let original = "# my settings\nmodel = \"gpt-5.5\"  # favourite\n\n[model_providers.mine]\nname = \"Mine\"\nenv_key = \"MINE_API_KEY\"\n";
    write(&machine, "codex-home/config.toml", original);
    let (before, _) = set_up(&machine, "codex", &env);
    let text = std::fs::read_to_string(codex_home.join("config.toml")).unwrap();
    assert!(
        text.starts_with("# my settings\nmodel = \"gpt-5.5\"  # favourite\n"),
        "{text}"
    );
    assert!(
        text.contains("[model_providers.mine]\nname = \"Mine\"\nenv_key = \"MINE_API_KEY\"\n"),
        "{text}"
    );
    let doc: toml_edit::DocumentMut = text.parse().unwrap();
    assert_eq!(
        doc["openai_base_url"].as_str(),
        Some(format!("{PROXY}/v1").as_str())
    );
    let server = &doc["mcp_servers"]["magic-context"];
    assert_eq!(server["command"].as_str(), Some(binary().as_str()));
    let args: Vec<&str> = server["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(args, ["mcp"]);
    assert!(
        !text.contains("[mcp_servers]\n"),
        "no empty parent table: {text}"
    );
    undo(&machine, "codex", &env, &before);
}

#[test]
fn pi_gets_provider_overrides_and_compaction_off() {
    let machine = Machine::fresh();
    write(
        &machine,
        "home/.pi/agent/models.json",
        "{\n  \"providers\": {\n    \"mine\": {\"baseUrl\": \"http://example.test\", \"apiKey\": \"keep-this-key\", \"models\": []}\n  }\n}\n",
    );
    let (before, after) = set_up(&machine, "pi", &[]);
    let models = read_json(&machine, "home/.pi/agent/models.json");
    assert_eq!(
        models["providers"],
        json!({
            "mine": {"baseUrl": "http://example.test", "apiKey": "keep-this-key", "models": []},
            "anthropic": {"baseUrl": PROXY},
            "openai": {"baseUrl": format!("{PROXY}/v1")}
        })
    );
    assert!(after.contains_key(Path::new("home/.pi/agent/settings.json")));
    assert_eq!(
        read_json(&machine, "home/.pi/agent/settings.json"),
        json!({"compaction": {"enabled": false}})
    );
    undo(&machine, "pi", &[], &before);
}

/// OpenCode adds `$schema` to a config without one when it loads it; a config `setup`
/// creates has it already, so the host leaves the file as `setup` wrote it and `--undo`
/// can remove it.
#[test]
fn an_opencode_config_setup_creates_starts_with_its_schema() {
    let machine = Machine::fresh();
    let (before, _) = set_up(&machine, "opencode", &[]);
    assert!(before.is_empty(), "{before:?}");
    let config = read_json(&machine, "xdg/opencode/opencode.json");
    assert_eq!(keys(&config), ["$schema", "provider", "mcp", "compaction"]);
    assert_eq!(config["$schema"], "https://opencode.ai/config.json");
    undo(&machine, "opencode", &[], &before);
}

#[test]
fn opencode_jsonc_keeps_its_comments() {
    let machine = Machine::fresh();
    let text = "{\n  // my model\n  \"model\": \"anthropic/x\", /* why */\n}\n";
    write(&machine, "xdg/opencode/opencode.jsonc", text);
    let (before, _) = set_up(&machine, "opencode", &[]);
    let written = std::fs::read_to_string(machine.path("xdg/opencode/opencode.jsonc")).unwrap();
    assert!(
        written.starts_with("{\n  // my model\n  \"model\": \"anthropic/x\", /* why */\n"),
        "{written}"
    );
    assert!(
        written.contains("\"compaction\": {\n    \"auto\": false\n  }"),
        "{written}"
    );
    assert!(!machine.path("xdg/opencode/opencode.json").exists());
    undo(&machine, "opencode", &[], &before);
}

#[test]
fn a_file_setup_cannot_read_is_refused_untouched() {
    let machine = Machine::fresh();
    let text = "{\n  \"model\": \n}\n";
    write(&machine, "xdg/opencode/opencode.json", text);
    let run = machine.run(&["setup", "opencode"], &[]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("opencode.json is not valid JSON"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(machine.path("xdg/opencode/opencode.json")).unwrap(),
        text
    );
    let bad_url = machine.run(&["setup", "pi", "--proxy-url", "127.0.0.1:4141"], &[]);
    assert_eq!(bad_url.code, Some(1));
    assert!(
        bad_url
            .stderr
            .contains("--proxy-url must start with http://"),
        "{}",
        bad_url.stderr
    );
    assert!(!machine.path("home/.pi").exists());
}

#[test]
fn doctor_checks_each_host_that_was_set_up() {
    let machine = Machine::fresh();
    let data_dir = machine.path("data");
    let serve = Server::serve(&machine, "http://127.0.0.1:9", &data_dir, 200_000);
    machine
        .run(
            &["setup", "claude-code", "--proxy-url", &serve.base_url],
            &[],
        )
        .success();
    machine
        .run(
            &[
                "setup",
                "pi",
                "--proxy-url",
                &format!("{}/v1/", serve.base_url),
            ],
            &[],
        )
        .success();
    let report = machine.run(&["doctor", "--json"], &[]).success().json();
    let hosts = report["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2, "{report:#}");
    assert_eq!(hosts[0]["host"], "claude-code");
    assert_eq!(hosts[0]["ok"], true, "{report:#}");
    assert_eq!(hosts[0]["proxy"], "listening");
    assert_eq!(hosts[0]["mcp_registered"], true);
    assert_eq!(hosts[0]["compaction_off"], true);
    assert_eq!(hosts[1]["host"], "pi");
    assert_eq!(hosts[1]["proxy_url"], serve.base_url.as_str());
    assert_eq!(hosts[1]["mcp_registered"], Value::Null, "Pi has no MCP");
    assert_eq!(hosts[1]["ok"], true, "{report:#}");

    // The user points Claude Code elsewhere, and the proxy stops.
    let mut settings = read_json(&machine, "home/.claude/settings.json");
    settings["env"]["ANTHROPIC_BASE_URL"] = json!("https://api.anthropic.com");
    write(
        &machine,
        "home/.claude/settings.json",
        &settings.to_string(),
    );
    drop(serve);
    let run = machine.run(&["doctor"], &[]).success();
    assert!(
        run.stdout
            .contains("host    claude-code  WARN  its config no longer points at"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("host    pi  WARN  no proxy listens at"),
        "{}",
        run.stdout
    );
}
