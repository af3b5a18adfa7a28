//! One scripted end-to-end session: the real Claude Code CLI (`claude -p`) works in a scratch
//! repository against `magic-context sim` playing the model from a script, straight or
//! through `magic-context serve`, and the run keeps what every party recorded: Claude Code's
//! exit, output and transcript, the simulator's ledger of upstream calls, the servers' logs.
//!
//! The scenarios (`claude_code_proxy`, `claude_code_small_window`) bring their own repository,
//! script and assertions; the figures they share (main calls, cache-read share, the ledger
//! table of a failure message) are computed here, once.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use mc_sim::CallRecord;

use super::Machine;
use super::deadline::{Bounded, CLIENT};
use super::servers::Server;
use super::transcript::{self, ToolResult};
use crate::claude_code;

/// The model Claude Code is told to use; its calls are the session's main calls (side calls
/// and background agents may use other models).
pub const MAIN_MODEL: &str = "claude-opus-4-8";

/// How a client reaches the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Straight to the simulator, nothing managing the session.
    Direct,
    /// Through `magic-context serve`.
    Proxy,
}

/// A script installed on the machine, for `magic-context sim --script`.
pub struct Script {
    pub path: PathBuf,
    /// How many `tool_use` blocks its turns hold: one tool result each, if the run finishes.
    pub tool_calls: usize,
}

impl Script {
    /// Writes `text` (a script's JSON) to `name` in the machine.
    pub fn install(machine: &Machine, name: &str, text: &str) -> Self {
        let script: serde_json::Value = serde_json::from_str(text).unwrap();
        let tool_calls = script["turns"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|turn| turn["content"].as_array().unwrap())
            .filter(|block| block["type"] == "tool_use")
            .count();
        let path = machine.path(name);
        std::fs::write(&path, text).unwrap();
        Self { path, tool_calls }
    }
}

/// The provider the session talks to, and what stands in between.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// The simulator's window (`--model-window`), in its own tokens.
    pub sim_window_tokens: u64,
    /// How many tokens the simulator counts per token a client estimates (`--token-scale`).
    pub token_scale: f64,
    /// `magic-context serve --context-window`; `None` runs Claude Code straight against the
    /// simulator.
    pub proxy_window_tokens: Option<u64>,
    /// How the simulator answers the historian's calls (`--historian`).
    pub sim_historian: &'static str,
}

/// One finished `claude -p` run, and what every party recorded.
pub struct ClaudeSession {
    pub machine: Machine,
    pub sim: Server,
    pub proxy: Option<Server>,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub wall: Duration,
    /// The simulator's ledger: every upstream call.
    pub ledger: Vec<CallRecord>,
    /// Claude Code's own record of every tool result it produced.
    pub transcript: Vec<ToolResult>,
    /// The API errors Claude Code recorded: every model call it got refused.
    pub api_errors: Vec<String>,
    /// How many tool calls the script makes.
    pub scripted_tool_calls: usize,
}

impl ClaudeSession {
    /// Starts the servers `setup` asks for and runs Claude Code in `repo` (inside `machine`)
    /// to the end of `script`. The servers keep running until the session is dropped, so the
    /// store can be read.
    pub fn run(machine: Machine, repo: &Path, script: &Script, setup: Setup) -> Self {
        let sim = Server::sim_playing(
            &script.path,
            setup.sim_window_tokens,
            setup.token_scale,
            setup.sim_historian,
        );
        let proxy = setup.proxy_window_tokens.map(|window_tokens| {
            let data_dir = machine.path("data");
            Server::serve(&machine, &sim.base_url, &data_dir, window_tokens)
        });
        // The only difference between the routes for Claude Code: its base URL.
        let base_url = proxy
            .as_ref()
            .map_or(&sim.base_url, |proxy| &proxy.base_url);
        let started = Instant::now();
        let status = run_claude(&machine, repo, base_url);
        let wall = started.elapsed();
        let read = |name: &str| std::fs::read_to_string(machine.path(name)).unwrap();
        let (stdout, stderr) = (read("claude.stdout"), read("claude.stderr"));
        let ledger = sim.ledger();
        let session_file = transcript::session_file(&machine.path("home"));
        Self {
            sim,
            proxy,
            status,
            stdout,
            stderr,
            wall,
            ledger,
            transcript: transcript::tool_results(&session_file),
            api_errors: transcript::api_errors(&session_file),
            scripted_tool_calls: script.tool_calls,
            machine,
        }
    }

    /// The calls Claude Code's main loop made, served or refused.
    pub fn main_calls(&self) -> impl Iterator<Item = &CallRecord> {
        self.ledger.iter().filter(|call| call.model == MAIN_MODEL)
    }

    /// cache_read ÷ (cache_read + cache writes + uncached input) over the served main calls
    /// from the second on (the first call can only write).
    pub fn cache_read_share(&self) -> f64 {
        let served = self.main_calls().filter(|call| call.status == 200).skip(1);
        let (read, total) = served.fold((0, 0), |(read, total), call| {
            let prompt = call.cache_read + call.cache_write_5m + call.cache_write_1h;
            (read + call.cache_read, total + prompt + call.input_tokens)
        });
        if total == 0 {
            return 0.0;
        }
        read as f64 / total as f64
    }

    /// The largest main-call prompt, served or refused.
    pub fn peak_prompt_tokens(&self) -> u64 {
        self.main_calls()
            .map(|call| call.prompt_tokens)
            .max()
            .unwrap_or(0)
    }

    /// The proxy's store (`$MAGIC_CONTEXT_DATA_DIR/context.db`).
    pub fn store_path(&self) -> PathBuf {
        self.machine.path("data/context.db")
    }

    /// Everything a reader needs to see why a run failed, under the scenario's `summary`:
    /// Claude Code's output, one line per upstream call, the servers' logs.
    pub fn diagnostics(&self, summary: &str) -> String {
        let calls: Vec<String> = self
            .ledger
            .iter()
            .map(|call| {
                format!(
                    "#{} {} {} prompt={} in={} write={} read={}",
                    call.seq,
                    call.model,
                    call.status,
                    call.prompt_tokens,
                    call.input_tokens,
                    call.cache_write_5m + call.cache_write_1h,
                    call.cache_read
                )
            })
            .collect();
        let proxy = self.proxy.as_ref().map(Server::stderr).unwrap_or_default();
        format!(
            "{summary}\n--- claude stdout ---\n{}\n--- claude stderr ---\n{}\n--- claude api \
             errors ---\n{}\n--- ledger ---\n{}\n{}\n{}",
            self.stdout,
            self.stderr,
            self.api_errors.join("\n"),
            calls.join("\n"),
            self.sim.stderr(),
            proxy
        )
    }
}

/// Runs `claude -p` in `repo` against `base_url`, offline, with the machine's HOME; its
/// output goes to `claude.stdout` and `claude.stderr` in the machine. Kills it after
/// [`CLIENT`].
fn run_claude(machine: &Machine, repo: &Path, base_url: &str) -> ExitStatus {
    let mut command = claude_command(machine, repo, base_url);
    command
        .args(["-p", "Work through the repository step by step."])
        .args(["--model", MAIN_MODEL, "--dangerously-skip-permissions"]);
    run_bounded(machine, command, "claude")
}

/// The real `claude` in `repo`, against `base_url`, offline: an emptied environment but for
/// PATH, the machine's HOME, a dummy API key and the switches that stop Claude Code's own
/// traffic (telemetry, updates). The caller adds the arguments.
pub fn claude_command(machine: &Machine, repo: &Path, base_url: &str) -> Command {
    let mut command = Command::new(claude_code::binary());
    command
        .current_dir(repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", machine.path("home"))
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("ANTHROPIC_API_KEY", "sk-ant-dummy-key-for-tests")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("IS_SANDBOX", "1");
    command
}

/// Runs `command` to its end with no input, its output in `NAME.stdout` and `NAME.stderr` in
/// the machine; kills it, and what it started, after [`CLIENT`] (a client retrying a failing
/// call forever).
pub fn run_bounded(machine: &Machine, mut command: Command, name: &str) -> ExitStatus {
    let stdout = File::create(machine.path(&format!("{name}.stdout"))).unwrap();
    let stderr = File::create(machine.path(&format!("{name}.stderr"))).unwrap();
    command.stdout(stdout).stderr(stderr);
    Bounded::status(&mut command, name, CLIENT)
}
