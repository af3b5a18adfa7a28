//! The long end-to-end session: the real Claude Code CLI works for 60+ model calls in a
//! scratch git repository, against `magic-context sim` playing the model from
//! `tests/fixtures/long_session.json`, with an 80K-token window (see [`WINDOW_TOKENS`] for
//! why not 60K).
//!
//! The script makes Claude Code run real tools over large outputs: Bash (`seq`, `cat` and
//! `sed` of the generated files, `ls -la`, `git diff`, a commit), Read of 16–20 KB files
//! (whole, again after each change so earlier reads are superseded, an unchanged file again
//! after a `touch`, and line ranges), Edit (each after a Read, as Claude Code requires),
//! failing commands and a final answer: 67 main-model calls and 68 tool results. Each scripted
//! turn waits for a marker in the previous tool result, so a step that went wrong ends the run
//! early with the script's `SCRIPT-FELL-THROUGH` answer instead of drifting.
//!
//! Unmanaged, the prompt grows to about 100K tokens, 1.25 times the window (against a 60K
//! simulator, call 36 is refused and Claude Code stops with "Prompt is too long"). The
//! control test runs Claude Code straight against the simulator with an unlimited window and
//! proves it. The proxy test puts `magic-context serve` in between with the 80K window, so
//! the engine must keep the session inside it.
//!
//! The sizes are chosen so a session that follows DESIGN can fit: Claude Code's system prompt
//! and tools are about 20K tokens, the first 20 calls add about 20K, and no 20 consecutive
//! calls add more than about 31K (the newest 20 tags are protected from drops). Keep that
//! shape when editing the script: a window too small for the protected tail is a test no
//! engine can pass.
//!
//! A run takes 20–30 s on an idle machine, about two minutes on a loaded one; set
//! `MC_CLAUDE_BIN` to skip the npm install of Claude Code (see [`crate::claude_code`]).

mod scratch_repo;
mod servers;
mod store_check;
mod transcript;

use std::fs::File;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use mc_sim::CallRecord;

use self::servers::Server;
use self::transcript::ToolResult;
use crate::claude_code;
use crate::support::Machine;

/// The window the session must stay inside, in tokens.
///
/// Claude Code's own system prompt and tools take about 18.6K tokens, the engine keeps 20K
/// free for the answer (Claude Code asks for up to 32K output tokens) and never drops the
/// newest 20 tags (here about 20K of tool output). At a 60K window that floor sits at the
/// 95% ceiling of the 40K usable window, so every turn must bust the cache to land the two
/// tags that aged out of protection: measured, every call stayed inside 60K but the
/// cache-read share was 0.62. 80K leaves the engine room to let drops accumulate until a
/// bust pays, which is the regime a real session (200K and up) lives in.
const WINDOW_TOKENS: u64 = 80_000;
/// The simulator's window when nothing manages the session: large enough that nothing is
/// refused, so the control run shows how far the prompt grows.
const UNMANAGED_WINDOW_TOKENS: u64 = 1_000_000;
/// The model Claude Code is told to use; its calls are the session's main calls (side calls
/// and background agents may use other models).
const MAIN_MODEL: &str = "claude-opus-4-8";
/// The issue asks for at least this many main-model calls.
const MIN_MAIN_CALLS: usize = 60;
/// The floor for cache reads over all prompt tokens, from the second call on.
const MIN_CACHE_READ_SHARE: f64 = 0.8;
/// The script's last turn starts with this.
const FINAL_ANSWER: &str = "FINAL-ANSWER:";
/// What the script answers when no turn matched (its `final_text`).
const FELL_THROUGH: &str = "SCRIPT-FELL-THROUGH";
/// A run that takes longer than this is stuck (Claude Code retrying a failing call).
const CLAUDE_TIMEOUT: Duration = Duration::from_secs(600);

/// How Claude Code reaches the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// Straight to the simulator, nothing managing the session.
    Direct,
    /// Through `magic-context serve`.
    Proxy,
}

#[test]
fn long_session_without_a_proxy_outgrows_the_window() {
    let run = LongRun::start(Route::Direct);
    run.assert_completed();
    run.assert_cache_read_share();
    let peak = run.peak_prompt_tokens();
    assert!(
        peak > WINDOW_TOKENS * 6 / 5,
        "unmanaged, the session must outgrow the window by far for the proxy test to mean \
         anything; its largest prompt was {peak} tokens\n{}",
        run.diagnostics()
    );
}

#[test]
fn long_session_through_the_proxy_stays_inside_the_window() {
    let run = LongRun::start(Route::Proxy);
    run.assert_completed();
    run.assert_cache_read_share();
    // Proxy-only: these hold only when something manages the session.
    for call in &run.ledger {
        assert!(
            call.status == 200 && call.prompt_tokens <= WINDOW_TOKENS,
            "upstream call {} ({}) was {} tokens, status {}; the window is {WINDOW_TOKENS}\n{}",
            call.seq,
            call.model,
            call.prompt_tokens,
            call.status,
            run.diagnostics()
        );
    }
    store_check::assert_tool_results_stored(&run.store_path(), &run.transcript);
}

/// One finished `claude -p` run of the long script, and what every party recorded.
struct LongRun {
    machine: Machine,
    route: Route,
    sim: Server,
    proxy: Option<Server>,
    status: ExitStatus,
    stdout: String,
    stderr: String,
    wall: Duration,
    /// The simulator's ledger: every upstream call.
    ledger: Vec<CallRecord>,
    /// Claude Code's own record of every tool result it produced.
    transcript: Vec<ToolResult>,
    /// How many tool calls the script makes.
    scripted_tool_calls: usize,
}

impl LongRun {
    /// Prepares the repository, starts the servers `route` needs and runs Claude Code to the
    /// end. The servers keep running until the run is dropped, so the store can be read.
    fn start(route: Route) -> Self {
        let machine = Machine::fresh();
        let repo = machine.path("work/repo");
        scratch_repo::create(&repo);
        let (script, scripted_tool_calls) = install_script(&machine, &repo);
        let sim_window = match route {
            Route::Direct => UNMANAGED_WINDOW_TOKENS,
            Route::Proxy => WINDOW_TOKENS,
        };
        let sim = Server::sim(&script, sim_window);
        let proxy = (route == Route::Proxy).then(|| {
            let data_dir = machine.path("data");
            Server::serve(&machine, &sim.base_url, &data_dir, WINDOW_TOKENS)
        });
        // The only difference between the routes for Claude Code: its base URL.
        let base_url = proxy
            .as_ref()
            .map_or(&sim.base_url, |proxy| &proxy.base_url);
        let started = Instant::now();
        let status = run_claude(&machine, &repo, base_url);
        let wall = started.elapsed();
        let read = |name: &str| std::fs::read_to_string(machine.path(name)).unwrap();
        let (stdout, stderr) = (read("claude.stdout"), read("claude.stderr"));
        let ledger = sim.ledger();
        let transcript = transcript::tool_results(&transcript::session_file(&machine.path("home")));
        let run = Self {
            machine,
            route,
            sim,
            proxy,
            status,
            stdout,
            stderr,
            wall,
            ledger,
            transcript,
            scripted_tool_calls,
        };
        eprintln!("{}", run.summary());
        run
    }

    /// The run finished the whole script: exit 0 with the final answer, at least
    /// [`MIN_MAIN_CALLS`] main calls, and one transcript result per scripted tool call.
    fn assert_completed(&self) {
        assert!(
            self.status.success() && self.stdout.contains(FINAL_ANSWER),
            "claude did not finish with the script's final answer ({}; `{FELL_THROUGH}` means \
             a scripted turn's `when` did not match)\n{}",
            self.status,
            self.diagnostics()
        );
        let main_calls = self.main_calls().count();
        assert!(
            main_calls >= MIN_MAIN_CALLS,
            "{main_calls} main-model calls, fewer than {MIN_MAIN_CALLS}\n{}",
            self.diagnostics()
        );
        assert_eq!(
            self.transcript.len(),
            self.scripted_tool_calls,
            "one tool result per scripted tool call\n{}",
            self.diagnostics()
        );
        if self.route == Route::Direct {
            let refused: Vec<&CallRecord> =
                self.ledger.iter().filter(|c| c.status != 200).collect();
            assert!(refused.is_empty(), "refused calls: {refused:#?}");
        }
    }

    fn assert_cache_read_share(&self) {
        let share = self.cache_read_share();
        assert!(
            share >= MIN_CACHE_READ_SHARE,
            "cache-read share {share:.3} from the second main call on, below \
             {MIN_CACHE_READ_SHARE}\n{}",
            self.diagnostics()
        );
    }

    /// The calls Claude Code's main loop made, served or refused.
    fn main_calls(&self) -> impl Iterator<Item = &CallRecord> {
        self.ledger.iter().filter(|call| call.model == MAIN_MODEL)
    }

    /// cache_read ÷ (cache_read + cache writes + uncached input) over the served main calls
    /// from the second on (the first call can only write).
    fn cache_read_share(&self) -> f64 {
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

    fn peak_prompt_tokens(&self) -> u64 {
        self.main_calls()
            .map(|call| call.prompt_tokens)
            .max()
            .unwrap_or(0)
    }

    fn store_path(&self) -> PathBuf {
        self.machine.path("data/context.db")
    }

    /// One line of figures, printed after every run (visible with `--nocapture`).
    fn summary(&self) -> String {
        let over_window = self
            .main_calls()
            .filter(|call| call.prompt_tokens > WINDOW_TOKENS)
            .count();
        format!(
            "long session ({:?}): {} main calls of {} upstream, {} refused, {over_window} over \
             {WINDOW_TOKENS} tokens, peak prompt {}, cache-read share {:.3}, {} tool results, \
             claude ran {:.1}s",
            self.route,
            self.main_calls().count(),
            self.ledger.len(),
            self.ledger.iter().filter(|call| call.status != 200).count(),
            self.peak_prompt_tokens(),
            self.cache_read_share(),
            self.transcript.len(),
            self.wall.as_secs_f64(),
        )
    }

    /// Everything a reader needs to see why a run failed.
    fn diagnostics(&self) -> String {
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
            "{}\n--- claude stdout ---\n{}\n--- claude stderr ---\n{}\n--- ledger ---\n{}\n{}\n{}",
            self.summary(),
            self.stdout,
            self.stderr,
            calls.join("\n"),
            self.sim.stderr(),
            proxy
        )
    }
}

/// Writes the fixture with `{{REPO}}` replaced by the repository's path; returns where, and
/// how many tool calls it scripts.
fn install_script(machine: &Machine, repo: &std::path::Path) -> (PathBuf, usize) {
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/long_session.json");
    let text = std::fs::read_to_string(fixture).unwrap();
    // The path as a JSON string body, so any character in it stays valid JSON.
    let repo_json = serde_json::to_string(repo.to_str().unwrap()).unwrap();
    let text = text.replace("{{REPO}}", repo_json.trim_matches('"'));
    let script: serde_json::Value = serde_json::from_str(&text).unwrap();
    let tool_calls = script["turns"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|turn| turn["content"].as_array().unwrap())
        .filter(|block| block["type"] == "tool_use")
        .count();
    let path = machine.path("long_session.json");
    std::fs::write(&path, text).unwrap();
    (path, tool_calls)
}

/// Runs `claude -p` in `repo` against `base_url`, offline, with the machine's HOME; its
/// output goes to `claude.stdout` and `claude.stderr` in the machine. Kills it after
/// [`CLAUDE_TIMEOUT`].
fn run_claude(machine: &Machine, repo: &std::path::Path, base_url: &str) -> ExitStatus {
    let stdout = File::create(machine.path("claude.stdout")).unwrap();
    let stderr = File::create(machine.path("claude.stderr")).unwrap();
    let mut child = Command::new(claude_code::binary())
        .args(["-p", "Work through the repository step by step."])
        .args(["--model", MAIN_MODEL, "--dangerously-skip-permissions"])
        .current_dir(repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", machine.path("home"))
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("ANTHROPIC_API_KEY", "sk-ant-dummy-key-for-tests")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("IS_SANDBOX", "1")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > CLAUDE_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("claude ran longer than {CLAUDE_TIMEOUT:?}; killed");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
