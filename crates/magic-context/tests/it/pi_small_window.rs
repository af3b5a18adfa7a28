//! The real Pi coding agent through `magic-context serve` at a small window, on each of the
//! three wires Pi speaks (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses),
//! against `magic-context sim` playing the model from a script, offline.
//!
//! Pi runs [`steps::STEPS`] steps of two `bash` calls (a large output, then a one-line
//! check; `2 × STEPS + 1` model calls in all) at a 16K window: the outputs add up to several
//! windows, so the proxy must manage the session (fold, excerpt, drop) for it to finish. Pi is
//! told its model has a 200K window, so its own compaction never has a reason to run; the
//! proxy is the only thing keeping the session inside the window.
//!
//! Each run must show: Pi's success (exit 0, the script's final answer, one result per
//! scripted call); every upstream call served and inside the window; none of Pi's calls a
//! compaction (each carries Pi's tools, none asks for a summary); every tool result Pi
//! produced stored whole in the proxy's store, in one session (Pi names no session on
//! Anthropic and Chat, so the proxy keys it by content); the cache-read share of Pi's calls
//! from the second on at least [`MIN_CACHE_READ_SHARE`] (Anthropic's breakpoint rules on
//! Anthropic, OpenAI's automatic prefix caching on Chat and Responses); and the proxy's
//! management visible upstream (a prompt smaller than the one before it, though Pi's
//! conversation only grows, and a last request smaller than the tool output Pi holds).
//!
//! A control run sends the same session straight to the simulator: the provider refuses it
//! as over the window, and Pi compacts by itself, as the proxy runs check it never did.
//!
//! Each run prints one line of figures (visible with `--nocapture`).

mod steps;

use mc_store::Store;
use serde_json::Value;

use crate::support::Machine;
use crate::support::claude_session::{Route, Script};
use crate::support::pi_session::{PiSession, Wire, create_repo};
use crate::support::store_check;

/// The proxy's and the simulator's window, in tokens.
const WINDOW_TOKENS: u64 = 16_000;
/// The floor for cache reads over all prompt tokens of Pi's calls from the second on.
const MIN_CACHE_READ_SHARE: f64 = 0.8;
/// The fewest model calls a run must make.
const MIN_MODEL_CALLS: usize = 30;
/// Words of Pi's compaction call (its system prompt) and of the request it retries after one.
const COMPACTION_MARKERS: [&str; 2] = [
    "context summarization",
    "compacted into the following summary",
];

#[test]
fn pi_without_the_proxy_is_refused_and_compacts_by_itself() {
    PiSmallWindowRun::start(Wire::Anthropic, Route::Direct).assert_compacted_unmanaged();
}

#[test]
fn pi_on_anthropic_messages_stays_inside_a_small_window() {
    PiSmallWindowRun::start(Wire::Anthropic, Route::Proxy).assert_managed_run();
}

#[test]
fn pi_on_chat_completions_stays_inside_a_small_window() {
    PiSmallWindowRun::start(Wire::Chat, Route::Proxy).assert_managed_run();
}

#[test]
fn pi_on_responses_stays_inside_a_small_window() {
    PiSmallWindowRun::start(Wire::Responses, Route::Proxy).assert_managed_run();
}

/// One finished `pi -p` run of the step script on one wire.
struct PiSmallWindowRun {
    wire: Wire,
    route: Route,
    session: PiSession,
}

impl PiSmallWindowRun {
    fn start(wire: Wire, route: Route) -> Self {
        let machine = Machine::fresh();
        let repo = machine.path("work/repo");
        create_repo(&repo);
        let script = Script::install(&machine, "pi_steps.json", &steps::script());
        assert_eq!(script.tool_calls, 2 * steps::STEPS);
        let session = PiSession::run(machine, &repo, &script, wire, route, WINDOW_TOKENS);
        let run = Self {
            wire,
            route,
            session,
        };
        eprintln!("{}", run.summary());
        run
    }

    /// Unmanaged, the provider refuses Pi's growing session as over the window and Pi makes
    /// the compaction call [`Self::assert_no_compaction`] looks for, so the proxy runs' "no
    /// compaction" cannot pass merely because Pi's compaction stopped looking like one.
    fn assert_compacted_unmanaged(&self) {
        let session = &self.session;
        let refused = session
            .main_calls()
            .any(|call| call.status != 200 && call.prompt_tokens > WINDOW_TOKENS);
        let compactions = session
            .pi_bodies
            .iter()
            .filter(|body| compaction_sign(body).is_some())
            .count();
        assert!(
            refused && compactions > 0,
            "unmanaged, the provider must refuse a call over the window ({refused}) and Pi must \
             compact by itself ({compactions} compaction calls)\n{}",
            self.diagnostics()
        );
    }

    fn assert_managed_run(&self) {
        let session = &self.session;
        assert!(
            session.status.success() && session.stdout.contains(steps::FINAL_ANSWER),
            "pi did not finish with the script's final answer ({}; `{}` means a scripted turn's \
             `when` did not match)\n{}",
            session.status,
            steps::FELL_THROUGH,
            self.diagnostics()
        );
        assert_eq!(
            session.tool_results.len(),
            session.scripted_tool_calls,
            "one tool result per scripted tool call\n{}",
            self.diagnostics()
        );
        let calls = session.main_calls().count();
        assert!(
            calls >= MIN_MODEL_CALLS,
            "{calls} model calls of Pi's, fewer than {MIN_MODEL_CALLS}\n{}",
            self.diagnostics()
        );
        for call in &session.ledger {
            assert!(
                call.status == 200 && call.prompt_tokens <= WINDOW_TOKENS,
                "upstream call {} ({:?}) of {} tokens got status {} at the {WINDOW_TOKENS} \
                 window\n{}",
                call.seq,
                call.label,
                call.prompt_tokens,
                call.status,
                self.diagnostics()
            );
        }
        self.assert_no_compaction(calls);
        store_check::assert_tool_results_stored(&session.store_path(), &session.tool_results);
        let sessions = self.stored_sessions();
        assert_eq!(
            sessions.len(),
            1,
            "one Pi run must be one session in the store: {sessions:?}\n{}",
            self.diagnostics()
        );
        let share = session.cache_read_share();
        assert!(
            share >= MIN_CACHE_READ_SHARE,
            "cache-read share {share:.3} from Pi's second call on, below \
             {MIN_CACHE_READ_SHARE}\n{}",
            self.diagnostics()
        );
        self.assert_proxy_managed();
    }

    /// Every call of Pi's that reached the simulator is a turn of the task: it carries Pi's
    /// tools and, Pi having no MCP, the proxy's own on every wire, and neither asks for a
    /// summary nor retries after one.
    fn assert_no_compaction(&self, calls: usize) {
        let bodies = &self.session.pi_bodies;
        assert_eq!(
            bodies.len(),
            calls,
            "the relay and the ledger disagree on Pi's calls\n{}",
            self.diagnostics()
        );
        for (index, body) in bodies.iter().enumerate() {
            if let Some(sign) = compaction_sign(body) {
                panic!(
                    "Pi's call {index} is a compaction ({sign})\n{}",
                    self.diagnostics()
                );
            }
            assert!(
                offers_our_search(body),
                "Pi's call {index} went up without the proxy's tools\n{}",
                self.diagnostics()
            );
        }
    }

    /// The proxy acted on the window: Pi's conversation only grows, yet some prompt upstream
    /// is smaller than the one before it, and the last request upstream is smaller than the
    /// tool output Pi holds (what Pi sent, whole, would not fit).
    fn assert_proxy_managed(&self) {
        let session = &self.session;
        let prompts: Vec<u64> = session
            .main_calls()
            .map(|call| call.prompt_tokens)
            .collect();
        assert!(
            prompts.windows(2).any(|pair| pair[1] < pair[0]),
            "no prompt upstream shrank: the proxy never dropped or folded anything\n{}",
            self.diagnostics()
        );
        let held: usize = session
            .tool_results
            .iter()
            .flat_map(|result| &result.texts)
            .map(String::len)
            .sum();
        let last = session
            .pi_bodies
            .last()
            .map(Value::to_string)
            .unwrap_or_default();
        assert!(
            last.len() < held,
            "the last request upstream ({} bytes) is not smaller than the tool output Pi holds \
             ({held} bytes)\n{}",
            last.len(),
            self.diagnostics()
        );
    }

    /// The ids of the sessions in the proxy's store.
    fn stored_sessions(&self) -> Vec<String> {
        let store = Store::open(self.session.store_path()).unwrap();
        let sessions = store.read(|tx| tx.list_sessions(usize::MAX)).unwrap();
        sessions
            .iter()
            .map(|session| session.id.to_string())
            .collect()
    }

    /// One line of figures, printed after every run (visible with `--nocapture`).
    fn summary(&self) -> String {
        let session = &self.session;
        format!(
            "pi on {:?} ({:?}, {}): {}/{} tool results, {} model calls of {} upstream, peak prompt {} \
             of a {WINDOW_TOKENS} window, cache-read share {:.3}, pi ran {:.1}s",
            self.wire,
            self.route,
            self.wire.model(),
            session.tool_results.len(),
            session.scripted_tool_calls,
            session.main_calls().count(),
            session.ledger.len(),
            session.peak_prompt_tokens(),
            session.cache_read_share(),
            session.wall.as_secs_f64(),
        )
    }

    fn diagnostics(&self) -> String {
        self.session.diagnostics(&self.summary())
    }
}

/// Whether `body`'s tool list has the proxy's `ctx_search`, in its wire's shape (a Chat
/// tool names its function; Anthropic and Responses tools are named at the top).
fn offers_our_search(body: &Value) -> bool {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|tool| tool["name"] == "ctx_search" || tool["function"]["name"] == "ctx_search")
}

/// Why `body` (a request of Pi's) is a compaction, if it is one: it carries no tools, or
/// it asks for a summary or retries after one.
fn compaction_sign(body: &Value) -> Option<String> {
    if body["tools"].as_array().is_none_or(Vec::is_empty) {
        return Some("it carries no tools".to_owned());
    }
    let text = body.to_string();
    COMPACTION_MARKERS
        .iter()
        .find(|marker| text.contains(**marker))
        .map(|marker| format!("it says `{marker}`"))
}
