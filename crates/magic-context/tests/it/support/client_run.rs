//! One scripted end-to-end run of a real coding-agent CLI through `magic-context serve`
//! against `magic-context sim`, and what every party recorded: the client's exit and output,
//! the simulator's ledger, the bodies that reached the simulator, the servers' logs. The
//! client modules ([`super::codex_session`], [`super::opencode_session`]) configure and run
//! their client; the figures the scenarios share are computed here, once.
//!
//! A labelling relay between the proxy and the simulator tells the client's main calls
//! (those offering its shell tool) from every other call (the proxy's own, the client's
//! side calls), so the ledger's rows say which is which.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use mc_sim::CallRecord;
use serde_json::Value;

use super::Machine;
use super::claude_session::{Script, run_bounded};
use super::recording_relay::{Labeller, Relay};
use super::servers::Server;
use super::transcript::ToolResult;

/// The label of the client's main calls in the ledger.
pub const MAIN_LABEL: &str = "main";
/// The label of every other call that reached the simulator.
pub const OTHER_LABEL: &str = "other";

/// The servers of one run: the simulator, the labelling relay in front of it, the proxy.
pub struct Servers {
    pub sim: Server,
    pub relay: Relay,
    pub proxy: Server,
}

impl Servers {
    /// Starts the simulator playing `script` (its window and the proxy's both
    /// `window_tokens`), the relay labelling with `labeller`, and the proxy, its store under
    /// the machine's `data/`.
    pub fn start(
        machine: &Machine,
        script: &Script,
        window_tokens: u64,
        labeller: Labeller,
    ) -> Self {
        Self::start_scaled(machine, script, window_tokens, 1.0, labeller)
    }

    /// [`Self::start`] with the simulator counting `token_scale` times the tokens it
    /// calibrates (`--token-scale`), so it reports usage that large to the client.
    pub fn start_scaled(
        machine: &Machine,
        script: &Script,
        window_tokens: u64,
        token_scale: f64,
        labeller: Labeller,
    ) -> Self {
        let sim = Server::sim(&script.path, window_tokens, token_scale);
        let relay = Relay::start_labelling(&sim.base_url, labeller);
        let proxy = Server::serve(
            machine,
            &relay.base_url,
            &machine.path("data"),
            window_tokens,
        );
        Self { sim, relay, proxy }
    }
}

/// [`MAIN_LABEL`] for a body that offers a tool named `shell_tool` (Responses and Anthropic
/// name it at the top of the tool, Chat under `function`), else [`OTHER_LABEL`].
pub fn label_by_tool(body: &[u8], shell_tool: &str) -> String {
    let request: Value = serde_json::from_slice(body).unwrap_or_default();
    let offers_shell = request["tools"].as_array().is_some_and(|tools| {
        tools
            .iter()
            .any(|tool| tool["name"] == shell_tool || tool["function"]["name"] == shell_tool)
    });
    if offers_shell {
        MAIN_LABEL
    } else {
        OTHER_LABEL
    }
    .to_owned()
}

/// A finished client run, and what every party recorded.
pub struct ClientRun {
    pub machine: Machine,
    pub servers: Servers,
    /// The client's name, for messages (`codex`, `opencode`).
    pub client: &'static str,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub wall: Duration,
    /// The simulator's ledger: every upstream call.
    pub ledger: Vec<CallRecord>,
    /// The client's own record of every tool result it produced (filled by the client
    /// module once the run is over).
    pub tool_results: Vec<ToolResult>,
    /// How many tool calls the script makes.
    pub scripted_tool_calls: usize,
}

impl ClientRun {
    /// Runs `command` (the client, configured at `servers.proxy`) to its end with no input;
    /// its output goes to `CLIENT.stdout` and `CLIENT.stderr` in the machine.
    pub fn run(
        machine: Machine,
        servers: Servers,
        script: &Script,
        client: &'static str,
        command: Command,
    ) -> Self {
        let started = Instant::now();
        let status = run_bounded(&machine, command, client);
        let wall = started.elapsed();
        let read = |suffix: &str| {
            std::fs::read_to_string(machine.path(&format!("{client}.{suffix}"))).unwrap()
        };
        let (stdout, stderr) = (read("stdout"), read("stderr"));
        let ledger = servers.sim.ledger();
        Self {
            machine,
            servers,
            client,
            status,
            stdout,
            stderr,
            wall,
            ledger,
            tool_results: Vec::new(),
            scripted_tool_calls: script.tool_calls,
        }
    }

    /// The client's main calls, served or refused.
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

    /// Every body that reached the simulator, main calls and the others.
    pub fn upstream_bodies(&self) -> Vec<String> {
        [MAIN_LABEL, OTHER_LABEL]
            .iter()
            .flat_map(|label| self.servers.relay.log.bodies(label))
            .map(|body| String::from_utf8_lossy(&body).into_owned())
            .collect()
    }

    /// What the proxy logged.
    pub fn proxy_log(&self) -> String {
        self.servers.proxy.stderr()
    }

    /// The proxy's store (`$MAGIC_CONTEXT_DATA_DIR/context.db`).
    pub fn store_path(&self) -> PathBuf {
        self.machine.path("data/context.db")
    }

    /// One line of figures for the run, under `title`.
    pub fn summary(&self, title: &str, window_tokens: u64) -> String {
        format!(
            "{title}: {}, {}/{} tool results, {} main calls of {} upstream, {} cuts, peak prompt \
             {} of {window_tokens}, cache-read share {:.3}, {} ran {:.1}s",
            self.status,
            self.tool_results.len(),
            self.scripted_tool_calls,
            self.main_calls().count(),
            self.ledger.len(),
            self.shrinking_main_calls(),
            self.peak_prompt_tokens(),
            self.cache_read_share(),
            self.client,
            self.wall.as_secs_f64(),
        )
    }

    /// Everything a reader needs to see why a run failed, under `summary`: the client's
    /// output, one line per upstream call, the servers' logs.
    pub fn diagnostics(&self, summary: &str) -> String {
        let calls: Vec<String> = self
            .ledger
            .iter()
            .map(|call| {
                format!(
                    "#{} {} {} {} prompt={} in={} write={} read={}",
                    call.seq,
                    call.label.as_deref().unwrap_or("-"),
                    call.model,
                    call.status,
                    call.prompt_tokens,
                    call.input_tokens,
                    call.cache_write_5m + call.cache_write_1h,
                    call.cache_read
                )
            })
            .collect();
        let client = self.client;
        format!(
            "{summary}\n--- {client} stdout ---\n{}\n--- {client} stderr ---\n{}\n--- ledger \
             ---\n{}\n{}\n{}",
            self.stdout,
            self.stderr,
            calls.join("\n"),
            self.servers.sim.stderr(),
            self.servers.proxy.stderr()
        )
    }
}

/// The client's environment, emptied but for PATH (its node launcher) and the machine's
/// HOME, in `repo`.
pub fn bare_command(program: &Path, machine: &Machine, repo: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .current_dir(repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", machine.path("home"));
    command
}
