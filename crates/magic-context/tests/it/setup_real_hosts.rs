//! The real OpenCode, Codex and Pi, configured by `magic-context setup <host>` alone. On a
//! scratch machine `setup` points the host at `magic-context serve` in front of
//! `magic-context sim`; the host then runs a short scripted task (two shell calls, then a
//! final answer) on the built-in provider that config overrides, with a dummy key and its
//! offline switches: nothing names the proxy but what `setup` wrote. The task must finish
//! through the proxy, which stores the session with both tool results; the MCP server `setup`
//! registered (OpenCode, Codex) must reach the model as tools; `doctor` must find the host
//! set up; and `--undo` afterwards must restore every file `setup` touched byte for byte.
//!
//! Where `setup` turns the host's own compaction off (OpenCode `compaction.auto`, Pi
//! `compaction.enabled`), the simulator reports usage beyond the host's own window for the
//! model (`--token-scale`). With compaction on, that report makes OpenCode compact and
//! continue in a loop and Pi send a summary call and print nothing; with `setup`'s config
//! the run must be the three scripted calls and nothing else. Codex has no such switch
//! (see `host_config`), so its simulator reports honest usage.
//!
//! Each run prints one line of figures (visible with `--nocapture`).

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::Command;

use mc_core::{Part, joined_texts};
use mc_store::Store;
use serde_json::{Value, json};

use crate::support::Machine;
use crate::support::claude_session::Script;
use crate::support::client_run::{
    ClientRun, MAIN_LABEL, OTHER_LABEL, Servers, bare_command, label_by_tool,
};
use crate::support::recording_relay::Labeller;
use crate::support::seq_steps::create_repo;
use crate::{codex, opencode, pi_agent};

/// What each scripted shell call prints; the next turn plays once it came back.
const MARKERS: [&str; 2] = ["setup-check-one", "setup-check-two"];
/// The script's last turn.
const FINAL_ANSWER: &str = "FINAL-ANSWER: both checks printed their markers.";
/// What the simulator answers when no scripted turn matched.
const FELL_THROUGH: &str = "SCRIPT-FELL-THROUGH";
/// The task the host is given.
const PROMPT: &str = "Run the checks.";
/// The window of the simulator and the proxy: far above any usage the simulator reports
/// here, so the proxy has nothing to manage away and refuses nothing.
const PROVIDER_WINDOW_TOKENS: u64 = 20_000_000;
/// The key every host is given; the simulator accepts any.
const DUMMY_KEY: &str = "sk-dummy-key-for-tests";

/// OpenCode's own window for `claude-sonnet-4-5` (its built-in table, read offline).
const OPENCODE_CLAUDE_WINDOW_TOKENS: u64 = 1_000_000;
/// OpenCode's own window for `gpt-5`.
const OPENCODE_GPT5_WINDOW_TOKENS: u64 = 400_000;
/// Pi's own window for `claude-sonnet-4-5` (its built-in table).
const PI_CLAUDE_WINDOW_TOKENS: u64 = 200_000;
/// Pi's own window for `gpt-4.1`.
const PI_GPT41_WINDOW_TOKENS: u64 = 1_047_576;

/// Builds the host's command in a repository of the machine.
type HostCommand = Box<dyn Fn(&Machine, &Path) -> Command>;

/// One host's run: how `setup` names it, how its shell tool is called, where its config
/// lives on the machine and how the host is started.
struct Case {
    /// The host's name for `setup` and `doctor`, and its output files' prefix.
    host: &'static str,
    /// Labels a body that offers the host's shell tool as a main call.
    labeller: Labeller,
    /// The host's shell tool call running `command`: its name and input.
    shell_call: fn(&str) -> (&'static str, Value),
    /// How many times the tokens it calibrates the simulator reports.
    token_scale: f64,
    /// The host's own window for the model, which the reported usage must pass to prove
    /// the host's compaction stays off; `None` when usage is reported honestly.
    host_window_tokens: Option<u64>,
    /// The files `setup` touches, relative to the machine.
    config_files: Vec<String>,
    /// Config-location variables `setup`, `doctor` and the host share (besides HOME and
    /// XDG_CONFIG_HOME), each naming a folder relative to the machine.
    location_vars: Vec<(&'static str, &'static str)>,
    /// The prefix the host gives the MCP server's tools (`None`: the host has no MCP).
    mcp_tool_prefix: Option<&'static str>,
    /// Writes what the user had before `setup` (the host's offline switches).
    prepare: fn(&Machine),
    /// The host's command, with its provider's key and offline switches.
    command: HostCommand,
}

#[test]
fn opencode_reads_the_anthropic_provider_setup_writes() {
    check_host(opencode_case(
        "anthropic/claude-sonnet-4-5",
        "ANTHROPIC_API_KEY",
        OPENCODE_CLAUDE_WINDOW_TOKENS,
    ));
}

/// OpenCode's built-in OpenAI provider speaks the Responses API.
#[test]
fn opencode_reads_the_openai_provider_setup_writes() {
    check_host(opencode_case(
        "openai/gpt-5",
        "OPENAI_API_KEY",
        OPENCODE_GPT5_WINDOW_TOKENS,
    ));
}

#[test]
fn codex_reads_the_base_url_and_mcp_server_setup_writes() {
    check_host(Case {
        host: "codex",
        labeller: |body| label_by_tool(body, "exec_command"),
        shell_call: |command| ("exec_command", json!({"cmd": command})),
        token_scale: 1.0,
        host_window_tokens: None,
        config_files: vec!["codex-home/config.toml".to_owned()],
        location_vars: vec![("CODEX_HOME", "codex-home")],
        // Codex defers MCP tools behind `tool_search` for `gpt-5.5`; for `gpt-5` it offers
        // them as one `namespace` tool.
        mcp_tool_prefix: Some("mcp__magic_context."),
        prepare: |machine| write_codex_offline_config(&machine.path("codex-home")),
        command: Box::new(|machine, repo| {
            let mut command = bare_command(&codex::binary(), machine, repo);
            command
                .env("OPENAI_API_KEY", DUMMY_KEY)
                .env("RUST_LOG", "error")
                .args(["exec", "--skip-git-repo-check", "--model", "gpt-5"])
                // Its shell runs unsandboxed, as in the other Codex runs: a CI container
                // may not offer the kernel sandbox Codex would use.
                .args(["--dangerously-bypass-approvals-and-sandbox", PROMPT]);
            command
        }),
    });
}

/// Pi's agent dir in its default place.
#[test]
fn pi_reads_the_anthropic_override_setup_writes() {
    check_host(pi_case(
        "anthropic",
        "claude-sonnet-4-5",
        "ANTHROPIC_API_KEY",
        PI_CLAUDE_WINDOW_TOKENS,
        None,
    ));
}

/// Pi's agent dir moved by `PI_CODING_AGENT_DIR`.
#[test]
fn pi_reads_the_openai_override_setup_writes() {
    check_host(pi_case(
        "openai",
        "gpt-4.1",
        "OPENAI_API_KEY",
        PI_GPT41_WINDOW_TOKENS,
        Some("pi-agent"),
    ));
}

/// OpenCode on its built-in provider for `model`, the key in `key_var`, its own window for
/// the model `host_window_tokens`: OpenCode's own traffic off, npm pointed at a dead
/// registry so plugin resolution stays offline, and a title on the command line so it makes
/// no title call.
fn opencode_case(model: &'static str, key_var: &'static str, host_window_tokens: u64) -> Case {
    Case {
        host: "opencode",
        labeller: |body| label_by_tool(body, "bash"),
        shell_call: |command| {
            let input = json!({"command": command, "description": "Print a marker"});
            ("bash", input)
        },
        token_scale: 200.0,
        host_window_tokens: Some(host_window_tokens),
        config_files: vec!["xdg/opencode/opencode.json".to_owned()],
        location_vars: Vec::new(),
        mcp_tool_prefix: Some("magic-context_"),
        prepare: |_| {},
        command: Box::new(move |machine, repo| {
            let home = machine.path("home");
            let mut command = bare_command(&opencode::binary(), machine, repo);
            command
                .env("XDG_CONFIG_HOME", machine.path("xdg"))
                .env("XDG_DATA_HOME", home.join(".local/share"))
                .env("XDG_CACHE_HOME", home.join(".cache"))
                .env("XDG_STATE_HOME", home.join(".local/state"))
                .env(key_var, DUMMY_KEY)
                .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
                .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
                .env("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1")
                .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
                .env("OPENCODE_DISABLE_SHARE", "1")
                .env("npm_config_registry", "http://127.0.0.1:9/")
                .args(["run", "--format", "json", "--title", "Setup check"])
                .args(["--model", model, PROMPT]);
            command
        }),
    }
}

/// Pi on its built-in `provider` with `model`, the key in `key_var`, its own window for the
/// model `host_window_tokens`, its agent dir `agent_dir` in the machine
/// (`PI_CODING_AGENT_DIR`) or else the default; offline (`PI_OFFLINE`).
fn pi_case(
    provider: &'static str,
    model: &'static str,
    key_var: &'static str,
    host_window_tokens: u64,
    agent_dir: Option<&'static str>,
) -> Case {
    let dir = agent_dir.unwrap_or("home/.pi/agent");
    Case {
        host: "pi",
        labeller: |body| label_by_tool(body, "bash"),
        shell_call: |command| ("bash", json!({"command": command})),
        token_scale: 1_500.0,
        host_window_tokens: Some(host_window_tokens),
        config_files: vec![format!("{dir}/models.json"), format!("{dir}/settings.json")],
        location_vars: agent_dir
            .map(|dir| ("PI_CODING_AGENT_DIR", dir))
            .into_iter()
            .collect(),
        mcp_tool_prefix: None,
        prepare: |_| {},
        command: Box::new(move |machine, repo| {
            let mut command = bare_command(&pi_agent::binary(), machine, repo);
            command
                .env(key_var, DUMMY_KEY)
                .env("PI_OFFLINE", "1")
                .env("PI_SKIP_VERSION_CHECK", "1")
                .env("PI_TELEMETRY", "0")
                .args(["--provider", provider, "--model", model, "-p", PROMPT]);
            command
        }),
    }
}

/// The user's own Codex config before `setup`: only the keys that keep Codex off the
/// network (update check, analytics, feedback, plugins, apps), none about the provider.
fn write_codex_offline_config(codex_home: &Path) {
    std::fs::create_dir_all(codex_home).unwrap();
    let config = "check_for_update_on_startup = false\n\n[analytics]\nenabled = false\n\n\
                  [feedback]\nenabled = false\n\n[features]\nplugins = false\n\
                  remote_plugin = false\napps = false\n";
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
}

/// Two shell calls, each once the marker before it came back, then the final answer.
fn script(shell_call: fn(&str) -> (&'static str, Value)) -> String {
    let call = |marker: &str| {
        let (name, input) = shell_call(&format!("echo {marker}"));
        json!([{"type": "tool_use", "name": name, "input": input}])
    };
    let turns = json!([
        {"content": call(MARKERS[0])},
        {"when": {"last_tool_result_contains": MARKERS[0]}, "content": call(MARKERS[1])},
        {"when": {"last_tool_result_contains": MARKERS[1]},
         "content": [{"type": "text", "text": FINAL_ANSWER}]},
    ]);
    serde_json::to_string_pretty(&json!({"final_text": FELL_THROUGH, "turns": turns})).unwrap()
}

/// The bytes of each file, `None` where there is none.
fn contents(machine: &Machine, files: &[String]) -> Vec<Option<Vec<u8>>> {
    files
        .iter()
        .map(|file| std::fs::read(machine.path(file)).ok())
        .collect()
}

/// The names of the tools a request body offers (Anthropic and Responses name them at the
/// top of the tool, Chat under `function`); a Responses `namespace` tool's own tools are
/// named `NAMESPACE.TOOL`.
fn tool_names(body: &[u8]) -> Vec<String> {
    let request: Value = serde_json::from_slice(body).unwrap_or_default();
    let mut names = Vec::new();
    for tool in request["tools"].as_array().into_iter().flatten() {
        let Some(name) = tool["name"].as_str().or(tool["function"]["name"].as_str()) else {
            continue;
        };
        names.push(name.to_owned());
        for inner in tool["tools"].as_array().into_iter().flatten() {
            if let Some(inner) = inner["name"].as_str() {
                names.push(format!("{name}.{inner}"));
            }
        }
    }
    names
}

/// The texts of the tool results the proxy stored, per stored session.
fn stored_tool_results(store: &Path) -> Vec<Vec<String>> {
    let store = Store::open(store).unwrap();
    store
        .read(|tx| {
            let mut sessions = Vec::new();
            for record in tx.list_sessions(usize::MAX)? {
                let mut results = Vec::new();
                for row in tx.messages(&record.id, ..)? {
                    for part in row.message.parts {
                        if let Part::ToolResult { content, .. } = part {
                            results.push(joined_texts(&content));
                        }
                    }
                }
                sessions.push(results);
            }
            Ok(sessions)
        })
        .unwrap()
}

/// Sets the host up on a fresh machine, runs it with nothing but that config, checks what
/// every party saw, then undoes the setup.
fn check_host(case: Case) {
    let machine = Machine::fresh();
    let repo = machine.path("work/repo");
    create_repo(&repo);
    (case.prepare)(&machine);
    let before = contents(&machine, &case.config_files);
    let location_env: Vec<(&str, OsString)> = case
        .location_vars
        .iter()
        .map(|(name, dir)| (*name, machine.path(dir).into_os_string()))
        .collect();
    let env: Vec<(&str, &OsStr)> = location_env
        .iter()
        .map(|(name, value)| (*name, value.as_os_str()))
        .collect();

    let script = Script::install(&machine, "setup_check.json", &script(case.shell_call));
    let servers = Servers::start_scaled(
        &machine,
        &script,
        PROVIDER_WINDOW_TOKENS,
        case.token_scale,
        case.labeller,
    );
    let proxy_url = servers.proxy.base_url.clone();
    machine
        .run(&["setup", case.host, "--proxy-url", &proxy_url], &env)
        .success();

    let mut command = (case.command)(&machine, &repo);
    command.envs(location_env.iter().map(|(name, value)| (name, value)));
    let run = ClientRun::run(machine, servers, &script, case.host, command);
    let summary = format!(
        "{} set up by `setup`: {}, {} upstream calls, peak reported prompt {}, {} ran {:.1}s",
        case.host,
        run.status,
        run.ledger.len(),
        run.peak_prompt_tokens(),
        case.host,
        run.wall.as_secs_f64()
    );
    eprintln!("{summary}");
    let diagnostics = run.diagnostics(&summary);

    assert!(
        run.status.success() && run.stdout.contains(FINAL_ANSWER),
        "{} did not finish with the script's final answer (`{FELL_THROUGH}` means a scripted \
         turn did not match)\n{diagnostics}",
        case.host
    );
    // Three main calls reached the simulator through the proxy, and nothing else: no
    // compaction, no side call.
    let labels: Vec<&str> = run
        .ledger
        .iter()
        .map(|call| call.label.as_deref().unwrap_or("-"))
        .collect();
    assert_eq!(
        labels, [MAIN_LABEL; 3],
        "the host's calls and no other ({OTHER_LABEL}: a side call)\n{diagnostics}"
    );
    assert!(
        run.ledger.iter().all(|call| call.status == 200),
        "{diagnostics}"
    );
    if let Some(host_window) = case.host_window_tokens {
        let reported = run.main_calls().last().unwrap().prompt_tokens;
        assert!(
            reported > host_window,
            "the simulator reported {reported} tokens, not past the host's own window of \
             {host_window}: the host had no reason to compact\n{diagnostics}"
        );
    }
    // The proxy managed the session: one stored, holding both tool results.
    let stored = stored_tool_results(&run.store_path());
    assert!(
        stored.len() == 1
            && stored[0].len() == MARKERS.len()
            && MARKERS
                .iter()
                .zip(&stored[0])
                .all(|(marker, text)| text.contains(marker)),
        "one stored session with both tool results: {stored:?}\n{diagnostics}"
    );
    let bodies = run.servers.relay.log.bodies(MAIN_LABEL);
    let names = tool_names(&bodies[0]);
    let searches: Vec<&String> = names
        .iter()
        .filter(|name| name.ends_with("ctx_search"))
        .collect();
    if let Some(prefix) = case.mcp_tool_prefix {
        // Through the MCP server only: the proxy adds no second copy.
        assert!(
            matches!(searches.as_slice(), [name] if name.starts_with(prefix)),
            "the MCP server's tools (named `{prefix}ctx_…`) reach the model, once: \
             {names:?}\n{diagnostics}"
        );
    } else {
        assert_eq!(
            searches,
            ["ctx_search"],
            "a host without MCP gets the proxy's tools: {names:?}\n{diagnostics}"
        );
    }
    let report = run
        .machine
        .run(&["doctor", "--json"], &env)
        .success()
        .json();
    assert_eq!(report["hosts"][0]["host"], case.host, "{report:#}");
    assert_eq!(report["hosts"][0]["ok"], true, "{report:#}");

    run.machine
        .run(&["setup", case.host, "--undo"], &env)
        .success();
    assert!(
        contents(&run.machine, &case.config_files) == before,
        "undo after the host ran restores {:?} byte for byte",
        case.config_files
    );
    for file in &case.config_files {
        let backup = run.machine.path(&format!("{file}.magic-context-backup"));
        assert!(!backup.exists(), "{} is left", backup.display());
    }
}
