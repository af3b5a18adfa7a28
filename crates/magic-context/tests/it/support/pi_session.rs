//! One scripted end-to-end session of the real Pi coding agent (`pi -p`) through
//! `magic-context serve` to `magic-context sim`, on one of the three wires Pi speaks, and what
//! every party recorded: Pi's exit, output and session file, the simulator's ledger, the
//! requests that reached the simulator (through a [`Relay`]), the servers' logs.
//!
//! Pi is configured as a new user would point it at the proxy: a custom provider in
//! `$HOME/.pi/agent/models.json` whose `baseUrl` is the proxy, offline (`PI_OFFLINE=1`).
//! The provider's `headers` mark Pi's own calls: [`LABEL`] names them in the simulator's
//! ledger (`x-sim-label`) and files their bodies in the relay ([`TURN_HEADER`]), so the
//! proxy's historian calls (which carry neither) are told apart from Pi's.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use mc_sim::CallRecord;
use serde_json::{Value, json};

use super::Machine;
use super::claude_session::{Route, Script, run_bounded};
use super::git_repo::commit_all;
use super::recording_relay::{Relay, TURN_HEADER};
use super::servers::Server;
use super::transcript::ToolResult;
use crate::pi_agent;

/// The header value that marks Pi's own calls, in the ledger and the relay.
pub const LABEL: &str = "pi";
/// The context window Pi is told the model has: far above the proxy's, so Pi's own
/// compaction (at `contextWindow − 16384` of reported usage) never has a reason to run.
const PI_CONTEXT_WINDOW: u64 = 200_000;

/// The wire Pi speaks to the provider (its provider's `api`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// `anthropic-messages`: `POST /v1/messages`, no session id.
    Anthropic,
    /// `openai-completions`: `POST /v1/chat/completions`, no session id.
    Chat,
    /// `openai-responses`: `POST /v1/responses`, `session_id` and `prompt_cache_key`.
    Responses,
}

impl Wire {
    fn api(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic-messages",
            Self::Chat => "openai-completions",
            Self::Responses => "openai-responses",
        }
    }

    /// A model the simulator prices on this wire's caching rules.
    pub fn model(self) -> &'static str {
        match self {
            Self::Anthropic => "claude-sonnet-4-5",
            Self::Chat | Self::Responses => "gpt-4.1",
        }
    }

    /// Pi's `baseUrl` for a proxy at `proxy`: Anthropic's SDK appends `/v1/messages` itself,
    /// the OpenAI ones only `/chat/completions` or `/responses`.
    fn base_url(self, proxy: &str) -> String {
        match self {
            Self::Anthropic => proxy.to_owned(),
            Self::Chat | Self::Responses => format!("{proxy}/v1"),
        }
    }
}

/// One finished `pi -p` run, and what every party recorded.
pub struct PiSession {
    pub wire: Wire,
    /// Where Pi was pointed: the proxy, or the relay on the [`Route::Direct`] route.
    pub base_url: String,
    pub machine: Machine,
    pub sim: Server,
    /// `None` on the [`Route::Direct`] route.
    pub proxy: Option<Server>,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub wall: Duration,
    /// The simulator's ledger: every upstream call.
    pub ledger: Vec<CallRecord>,
    /// Pi's own record of every tool result it produced.
    pub tool_results: Vec<ToolResult>,
    /// The body of every call of Pi's that reached the simulator, in arrival order.
    pub pi_bodies: Vec<Value>,
    /// How many tool calls the script makes.
    pub scripted_tool_calls: usize,
}

impl PiSession {
    /// Starts the simulator (its window `window_tokens`), a relay in front of it and, on the
    /// [`Route::Proxy`] route, the proxy (its window `window_tokens` too) in front of the
    /// relay; then runs Pi in `repo` (inside `machine`) on `wire` to the end of `script`. The
    /// servers keep running until the session is dropped.
    pub fn run(
        machine: Machine,
        repo: &Path,
        script: &Script,
        wire: Wire,
        route: Route,
        window_tokens: u64,
    ) -> Self {
        let sim = Server::sim(&script.path, window_tokens, 1.0);
        let relay = Relay::start(&sim.base_url);
        let proxy = (route == Route::Proxy).then(|| {
            let data_dir = machine.path("data");
            Server::serve(&machine, &relay.base_url, &data_dir, window_tokens)
        });
        // The only difference between the routes for Pi: its base URL.
        let base_url = proxy
            .as_ref()
            .map_or(&relay.base_url, |proxy| &proxy.base_url);
        let base_url = base_url.clone();
        let home = machine.path("home");
        write_config(&home, wire, &base_url);
        let started = Instant::now();
        let status = run_bounded(&machine, pi_command(&home, repo, wire), "pi");
        let wall = started.elapsed();
        let read = |name: &str| std::fs::read_to_string(machine.path(name)).unwrap();
        let (stdout, stderr) = (read("pi.stdout"), read("pi.stderr"));
        let ledger = sim.ledger();
        let pi_bodies = relay
            .log
            .bodies(LABEL)
            .iter()
            .map(|body| serde_json::from_slice(body).unwrap())
            .collect();
        let tool_results = tool_results(&session_file(&home));
        Self {
            wire,
            base_url,
            sim,
            proxy,
            status,
            stdout,
            stderr,
            wall,
            ledger,
            tool_results,
            pi_bodies,
            scripted_tool_calls: script.tool_calls,
            machine,
        }
    }

    /// Runs Pi once more against the same servers, as another of the user's projects would:
    /// in `repo`, with a HOME of its own (`home`, inside the machine) configured like the
    /// first run's; its output goes to `NAME.stdout` and `NAME.stderr` for `name`. Returns
    /// its exit and the tool results it produced.
    pub fn run_again(&self, repo: &Path, home: &str, name: &str) -> (ExitStatus, Vec<ToolResult>) {
        let home = self.machine.path(home);
        write_config(&home, self.wire, &self.base_url);
        let status = run_bounded(&self.machine, pi_command(&home, repo, self.wire), name);
        (status, tool_results(&session_file(&home)))
    }

    /// Pi's calls, as the simulator served or refused them.
    pub fn main_calls(&self) -> impl Iterator<Item = &CallRecord> {
        self.ledger
            .iter()
            .filter(|call| call.label.as_deref() == Some(LABEL))
    }

    /// cache_read ÷ (cache_read + cache writes + uncached input) over Pi's served calls from
    /// the second on (the first can only write).
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

    /// The largest prompt of any upstream call, served or refused.
    pub fn peak_prompt_tokens(&self) -> u64 {
        self.ledger
            .iter()
            .map(|call| call.prompt_tokens)
            .max()
            .unwrap_or(0)
    }

    /// The proxy's store (`$MAGIC_CONTEXT_DATA_DIR/context.db`).
    pub fn store_path(&self) -> PathBuf {
        self.machine.path("data/context.db")
    }

    /// Everything a reader needs to see why a run failed, under `summary`: Pi's output, one
    /// line per upstream call, the servers' logs.
    pub fn diagnostics(&self, summary: &str) -> String {
        let calls: Vec<String> = self
            .ledger
            .iter()
            .map(|call| {
                format!(
                    "#{} {} {:?} {} prompt={} in={} write={} read={}",
                    call.seq,
                    call.model,
                    call.label,
                    call.status,
                    call.prompt_tokens,
                    call.input_tokens,
                    call.cache_write_5m + call.cache_write_1h,
                    call.cache_read
                )
            })
            .collect();
        format!(
            "{summary}\n--- pi stdout ---\n{}\n--- pi stderr ---\n{}\n--- ledger ---\n{}\n{}\n{}",
            self.stdout,
            self.stderr,
            calls.join("\n"),
            self.sim.stderr(),
            self.proxy.as_ref().map(Server::stderr).unwrap_or_default()
        )
    }
}

/// A scratch git repository with one commit, as Pi and the proxy's project identity expect.
pub fn create_repo(repo: &Path) {
    std::fs::create_dir_all(repo).unwrap();
    std::fs::write(repo.join("README.md"), "# step runner\n").unwrap();
    commit_all(repo);
}

/// Pi's config in `home`: one custom provider `mc` at the proxy with a dummy key
/// and one model, and settings that keep it quiet. Pi's own compaction stays on (its
/// default): the run shows it never needed it.
fn write_config(home: &Path, wire: Wire, proxy: &str) {
    let agent = home.join(".pi/agent");
    std::fs::create_dir_all(&agent).unwrap();
    let models = json!({"providers": {"mc": {
        "baseUrl": wire.base_url(proxy),
        "api": wire.api(),
        "apiKey": "sk-dummy-key-for-tests",
        "headers": {"x-sim-label": LABEL, TURN_HEADER: LABEL},
        "models": [{
            "id": wire.model(),
            "name": "Scripted model",
            "reasoning": false,
            "input": ["text"],
            "contextWindow": PI_CONTEXT_WINDOW,
            "maxTokens": 8192,
        }],
    }}});
    let settings = json!({"enableInstallTelemetry": false, "quietStartup": true});
    let write = |name: &str, value: &Value| {
        std::fs::write(
            agent.join(name),
            serde_json::to_string_pretty(value).unwrap(),
        )
        .unwrap();
    };
    write("models.json", &models);
    write("settings.json", &settings);
}

/// The real `pi -p` in `repo` on the configured provider, offline: an emptied environment
/// but for PATH (Pi runs on Node), the machine's HOME and the switches that stop Pi's own
/// traffic (version check, telemetry).
fn pi_command(home: &Path, repo: &Path, wire: Wire) -> Command {
    let mut command = Command::new(pi_agent::binary());
    command
        .current_dir(repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("PI_CODING_AGENT_DIR", home.join(".pi/agent"))
        .env("PI_OFFLINE", "1")
        .env("PI_SKIP_VERSION_CHECK", "1")
        .env("PI_TELEMETRY", "0")
        .args(["--provider", "mc", "--model", wire.model()])
        .args(["-p", "Work through the steps."]);
    command
}

/// The one session file under `home` (`.pi/agent/sessions/<escaped cwd>/<time>_<id>.jsonl`).
fn session_file(home: &Path) -> PathBuf {
    let sessions = home.join(".pi/agent/sessions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&sessions)
        .unwrap_or_else(|error| panic!("no Pi sessions at {}: {error}", sessions.display()))
        .flat_map(|project| std::fs::read_dir(project.unwrap().path()).unwrap())
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "expected one Pi session file: {files:?}");
    files.remove(0)
}

/// Every tool result in Pi's session file at `path`, in order: a `message` entry whose
/// message has the role `toolResult`, its `content` a list of text blocks. On Responses Pi
/// records a call's id as `<call_id>|<item id>` and sends only the `call_id` part upstream
/// (the `call_id` of the `function_call_output`), so that part is the result's id.
fn tool_results(path: &Path) -> Vec<ToolResult> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|entry| entry["type"] == "message" && entry["message"]["role"] == "toolResult")
        .map(|entry| {
            let message = &entry["message"];
            let texts = message["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|block| block["type"] == "text")
                .map(|block| block["text"].as_str().unwrap_or_default().to_owned())
                .collect();
            ToolResult {
                tool_use_id: wire_call_id(message["toolCallId"].as_str().unwrap()).to_owned(),
                texts,
                is_error: message["isError"] == true,
            }
        })
        .collect()
}

/// The id Pi sends upstream for the tool call it records as `recorded`.
fn wire_call_id(recorded: &str) -> &str {
    recorded.split('|').next().unwrap_or(recorded)
}

#[test]
fn a_responses_call_id_is_its_call_id_part() {
    assert_eq!(wire_call_id("call_sim_1|fc_sim_4"), "call_sim_1");
    assert_eq!(wire_call_id("toolu_01abc"), "toolu_01abc");
}
