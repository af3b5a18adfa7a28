//! One scripted end-to-end session of the real Codex CLI (`codex exec`): it works in a
//! scratch repository through `magic-context serve` against `magic-context sim` playing the
//! model from a script, on the Responses wire, and the run keeps what every party recorded:
//! Codex's exit, output and rollout, the simulator's ledger, the bodies that reached the
//! simulator, the servers' logs.
//!
//! Codex is pointed at the proxy the way `magic-context setup codex` does it: the built-in
//! OpenAI provider with `openai_base_url` (Codex's WebSocket attempt on that provider is
//! answered 426 by the proxy, so it posts over HTTP at once). The rest of its config keeps
//! it offline and unattended, and sets its own window far above the proxy's, so that Codex
//! never compacts by itself and only the proxy manages the context.
//!
//! A labelling relay between the proxy and the simulator tells Codex's main calls (those
//! offering its `exec_command` tool) from the proxy's own calls (the historian's), so the
//! ledger's rows say which is which.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use mc_sim::CallRecord;
use serde_json::Value;

use super::Machine;
use super::claude_session::{Script, run_bounded};
use super::codex_rollout;
use super::recording_relay::Relay;
use super::servers::Server;
use super::transcript::ToolResult;
use crate::codex;

/// The model Codex is told to use: a slug Codex knows (its own prompt and tools for it) and
/// the simulator prices as the GPT-5 family, with OpenAI's automatic caching.
pub const MODEL: &str = "gpt-5.5";
/// The label of Codex's main calls in the ledger.
pub const MAIN_LABEL: &str = "main";
/// The label of every other call that reached the simulator (the proxy's own).
pub const PROXY_LABEL: &str = "proxy";
/// Codex's own window, far above the proxy's, so Codex never compacts by itself.
const CODEX_WINDOW_TOKENS: u64 = 1_000_000;
/// The shell tool Codex offers the model for this model.
pub const SHELL_TOOL: &str = "exec_command";

/// One finished `codex exec` run, and what every party recorded.
pub struct CodexSession {
    pub machine: Machine,
    pub sim: Server,
    pub relay: Relay,
    pub proxy: Server,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub wall: Duration,
    /// The simulator's ledger: every upstream call.
    pub ledger: Vec<CallRecord>,
    /// Codex's rollout entries.
    pub rollout: Vec<Value>,
    /// Codex's own record of every tool result it produced.
    pub tool_results: Vec<ToolResult>,
    /// How many tool calls the script makes.
    pub scripted_tool_calls: usize,
}

impl CodexSession {
    /// Starts the simulator (its window and the proxy's both `window_tokens`), the relay and
    /// the proxy, and runs Codex in `repo` (inside `machine`) to the end of `script`.
    pub fn run(machine: Machine, repo: &Path, script: &Script, window_tokens: u64) -> Self {
        let sim = Server::sim(&script.path, window_tokens, 1.0);
        let relay = Relay::start_labelling(&sim.base_url, label);
        let proxy = Server::serve(
            &machine,
            &relay.base_url,
            &machine.path("data"),
            window_tokens,
        );
        let codex_home = machine.path("home/.codex");
        write_config(&codex_home, &proxy.base_url);
        let started = Instant::now();
        let status = run_codex(&machine, repo, &codex_home);
        let wall = started.elapsed();
        let read = |name: &str| std::fs::read_to_string(machine.path(name)).unwrap();
        let (stdout, stderr) = (read("codex.stdout"), read("codex.stderr"));
        let ledger = sim.ledger();
        let rollout = codex_rollout::entries(&codex_rollout::rollout_file(&codex_home));
        Self {
            tool_results: codex_rollout::tool_results(&rollout),
            rollout,
            sim,
            relay,
            proxy,
            status,
            stdout,
            stderr,
            wall,
            ledger,
            scripted_tool_calls: script.tool_calls,
            machine,
        }
    }

    /// Codex's main calls, served or refused.
    pub fn main_calls(&self) -> impl Iterator<Item = &CallRecord> {
        self.ledger
            .iter()
            .filter(|call| call.label.as_deref() == Some(MAIN_LABEL))
    }

    /// cache_read ÷ prompt over the served main calls from the second on (the first call can
    /// only write).
    pub fn cache_read_share(&self) -> f64 {
        let served = self.main_calls().filter(|call| call.status == 200).skip(1);
        let (read, total) = served.fold((0, 0), |(read, total), call| {
            (read + call.cache_read, total + call.prompt_tokens)
        });
        if total == 0 {
            return 0.0;
        }
        read as f64 / total as f64
    }

    /// The largest prompt the simulator received, of any call.
    pub fn peak_prompt_tokens(&self) -> u64 {
        self.ledger
            .iter()
            .map(|call| call.prompt_tokens)
            .max()
            .unwrap_or(0)
    }

    /// Main calls whose prompt is smaller than the main call's before: a stateless client
    /// only appends to its history, so each one is the proxy cutting the conversation.
    pub fn shrinking_main_calls(&self) -> usize {
        let prompts: Vec<u64> = self.main_calls().map(|call| call.prompt_tokens).collect();
        prompts.windows(2).filter(|pair| pair[1] < pair[0]).count()
    }

    /// Every body that reached the simulator, main calls and the proxy's own.
    pub fn upstream_bodies(&self) -> Vec<String> {
        [MAIN_LABEL, PROXY_LABEL]
            .iter()
            .flat_map(|label| self.relay.log.bodies(label))
            .map(|body| String::from_utf8_lossy(&body).into_owned())
            .collect()
    }

    /// The proxy's store (`$MAGIC_CONTEXT_DATA_DIR/context.db`).
    pub fn store_path(&self) -> PathBuf {
        self.machine.path("data/context.db")
    }

    /// Everything a reader needs to see why a run failed, under the scenario's `summary`:
    /// Codex's output, one line per upstream call, the servers' logs.
    pub fn diagnostics(&self, summary: &str) -> String {
        let calls: Vec<String> = self
            .ledger
            .iter()
            .map(|call| {
                format!(
                    "#{} {} {} {} prompt={} in={} read={}",
                    call.seq,
                    call.label.as_deref().unwrap_or("-"),
                    call.model,
                    call.status,
                    call.prompt_tokens,
                    call.input_tokens,
                    call.cache_read
                )
            })
            .collect();
        format!(
            "{summary}\n--- codex stdout ---\n{}\n--- codex stderr ---\n{}\n--- ledger ---\n{}\n{}\n{}",
            self.stdout,
            self.stderr,
            calls.join("\n"),
            self.sim.stderr(),
            self.proxy.stderr()
        )
    }
}

/// [`MAIN_LABEL`] for a body that offers Codex's shell tool, else [`PROXY_LABEL`].
fn label(body: &[u8]) -> String {
    let request: Value = serde_json::from_slice(body).unwrap_or_default();
    let offers_shell = request["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|tool| tool["name"] == SHELL_TOOL));
    if offers_shell {
        MAIN_LABEL
    } else {
        PROXY_LABEL
    }
    .to_owned()
}

/// Writes `config.toml` in `codex_home`: the built-in provider at the proxy (the key
/// `setup codex` writes), no prompts for approval, no network but the provider, and Codex's
/// own window far above the proxy's.
fn write_config(codex_home: &Path, proxy_url: &str) {
    std::fs::create_dir_all(codex_home).unwrap();
    let config = format!(
        r#"model = "{MODEL}"
openai_base_url = "{proxy_url}/v1"
model_context_window = {CODEX_WINDOW_TOKENS}
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false
"#
    );
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
}

/// Runs `codex exec` in `repo` with the machine's HOME and `codex_home`, a dummy key and no
/// input (else it waits to read stdin); its output goes to `codex.stdout` and `codex.stderr`
/// in the machine.
fn run_codex(machine: &Machine, repo: &Path, codex_home: &Path) -> ExitStatus {
    let mut command = Command::new(codex::binary());
    command
        .current_dir(repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", machine.path("home"))
        .env("CODEX_HOME", codex_home)
        .env("OPENAI_API_KEY", "sk-dummy-key-for-tests")
        .env("RUST_LOG", "error")
        .args(["exec", "--skip-git-repo-check", "Work through the steps."]);
    run_bounded(machine, command, "codex")
}
