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
//! The run itself (servers, Claude Code, its transcript, the ledger's figures) is
//! [`crate::support::claude_session`], shared with the small-window scenario. A run takes
//! 20–30 s on an idle machine, about two minutes on a loaded one; set `MC_CLAUDE_BIN` to skip
//! the npm install of Claude Code (see [`crate::claude_code`]).

mod scratch_repo;

use mc_sim::CallRecord;

use crate::support::Machine;
use crate::support::claude_session::{ClaudeSession, Route, Script, Setup};
use crate::support::store_check;

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
/// The issue asks for at least this many main-model calls.
const MIN_MAIN_CALLS: usize = 60;
/// The floor for cache reads over all prompt tokens, from the second call on.
const MIN_CACHE_READ_SHARE: f64 = 0.8;
/// The script's last turn starts with this.
const FINAL_ANSWER: &str = "FINAL-ANSWER:";
/// What the script answers when no turn matched (its `final_text`).
const FELL_THROUGH: &str = "SCRIPT-FELL-THROUGH";

#[test]
fn long_session_without_a_proxy_outgrows_the_window() {
    let run = LongRun::start(Route::Direct);
    run.assert_completed();
    run.assert_cache_read_share();
    let peak = run.session.peak_prompt_tokens();
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
    for call in &run.session.ledger {
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
    store_check::assert_tool_results_stored(&run.session.store_path(), &run.session.transcript);
}

/// One finished `claude -p` run of the long script.
struct LongRun {
    route: Route,
    session: ClaudeSession,
}

impl LongRun {
    /// Prepares the repository, starts the servers `route` needs and runs Claude Code to the
    /// end. The servers keep running until the run is dropped, so the store can be read.
    fn start(route: Route) -> Self {
        let machine = Machine::fresh();
        let repo = machine.path("work/repo");
        scratch_repo::create(&repo);
        let script = install_script(&machine, &repo);
        let setup = match route {
            Route::Direct => Setup {
                sim_window_tokens: UNMANAGED_WINDOW_TOKENS,
                token_scale: 1.0,
                proxy_window_tokens: None,
                sim_historian: "honest",
            },
            Route::Proxy => Setup {
                sim_window_tokens: WINDOW_TOKENS,
                token_scale: 1.0,
                proxy_window_tokens: Some(WINDOW_TOKENS),
                sim_historian: "honest",
            },
        };
        let session = ClaudeSession::run(machine, &repo, &script, setup);
        let run = Self { route, session };
        eprintln!("{}", run.summary());
        run
    }

    /// The run finished the whole script: exit 0 with the final answer, at least
    /// [`MIN_MAIN_CALLS`] main calls, and one transcript result per scripted tool call.
    fn assert_completed(&self) {
        let session = &self.session;
        assert!(
            session.status.success() && session.stdout.contains(FINAL_ANSWER),
            "claude did not finish with the script's final answer ({}; `{FELL_THROUGH}` means \
             a scripted turn's `when` did not match)\n{}",
            session.status,
            self.diagnostics()
        );
        let main_calls = session.main_calls().count();
        assert!(
            main_calls >= MIN_MAIN_CALLS,
            "{main_calls} main-model calls, fewer than {MIN_MAIN_CALLS}\n{}",
            self.diagnostics()
        );
        assert_eq!(
            session.transcript.len(),
            session.scripted_tool_calls,
            "one tool result per scripted tool call\n{}",
            self.diagnostics()
        );
        if self.route == Route::Direct {
            let refused: Vec<&CallRecord> =
                session.ledger.iter().filter(|c| c.status != 200).collect();
            assert!(refused.is_empty(), "refused calls: {refused:#?}");
        }
    }

    fn assert_cache_read_share(&self) {
        let share = self.session.cache_read_share();
        assert!(
            share >= MIN_CACHE_READ_SHARE,
            "cache-read share {share:.3} from the second main call on, below \
             {MIN_CACHE_READ_SHARE}\n{}",
            self.diagnostics()
        );
    }

    /// One line of figures, printed after every run (visible with `--nocapture`).
    fn summary(&self) -> String {
        let session = &self.session;
        let over_window = session
            .main_calls()
            .filter(|call| call.prompt_tokens > WINDOW_TOKENS)
            .count();
        format!(
            "long session ({:?}): {} main calls of {} upstream, {} refused, {over_window} over \
             {WINDOW_TOKENS} tokens, peak prompt {}, cache-read share {:.3}, {} tool results, \
             claude ran {:.1}s",
            self.route,
            session.main_calls().count(),
            session.ledger.len(),
            session
                .ledger
                .iter()
                .filter(|call| call.status != 200)
                .count(),
            session.peak_prompt_tokens(),
            session.cache_read_share(),
            session.transcript.len(),
            session.wall.as_secs_f64(),
        )
    }

    /// Everything a reader needs to see why a run failed.
    fn diagnostics(&self) -> String {
        self.session.diagnostics(&self.summary())
    }
}

/// Installs the fixture with `{{REPO}}` replaced by the repository's path.
fn install_script(machine: &Machine, repo: &std::path::Path) -> Script {
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/long_session.json");
    let text = std::fs::read_to_string(fixture).unwrap();
    // The path as a JSON string body, so any character in it stays valid JSON.
    let repo_json = serde_json::to_string(repo.to_str().unwrap()).unwrap();
    let text = text.replace("{{REPO}}", repo_json.trim_matches('"'));
    Script::install(machine, "long_session.json", &text)
}
