//! The window guarantee at a small window, against a provider that counts more than the
//! proxy estimates: the real Claude Code CLI runs 42 Bash steps in a scratch repository
//! through `magic-context serve` to `magic-context sim`, each step printing a log the
//! provider counts as 3–4K tokens (see [`step_logs`]), about 143K tokens of tool output in
//! all, several windows' worth.
//!
//! The simulator runs with `--token-scale 1.25`: it counts 25% more tokens than the proxy's
//! own estimate, as a real provider's tokenizer may, and the proxy can only learn that from
//! the usage and the overflow errors the provider reports. Claude Code's system prompt and
//! tools alone are then about 23K of a 40K window.
//!
//! Each run must hold the window guarantee (DESIGN §5): Claude Code finishes every step (exit
//! 0, the script's final answer, one transcript result per scripted call); the provider
//! rejects at most [`MAX_OVERFLOW_REJECTIONS`] prompts as too long (the proxy retries an
//! overflow once, planning with the count and limit the error states); no refusal reaches
//! Claude Code (no API error in its transcript, none logged by the proxy); every call the
//! simulator served is inside the window; the cache-read share holds its floor; and every
//! tool result is in the proxy's store. The same session runs at 40K and at 80K.
//!
//! A control run sends the same session straight to the 40K simulator: the provider refuses
//! it within the first steps, and the refusal shows where the proxy runs look for one (an API
//! error in Claude Code's transcript).
//!
//! Each run prints one line of figures (visible with `--nocapture`). Claude Code takes a few
//! seconds per run on an idle machine; the servers' start-up (the tokenizer tables) dominates.

mod step_logs;

use mc_sim::CallRecord;

use crate::support::Machine;
use crate::support::claude_session::{ClaudeSession, Route, Script, Setup};
use crate::support::servers::Server;
use crate::support::store_check;

/// How many tokens the simulated provider counts per token the proxy estimates.
const TOKEN_SCALE: f64 = 1.25;
/// Upstream overflow rejections a run may have: learning the token scale may cost a
/// rejection or two before the correction holds, each retried once by the proxy.
const MAX_OVERFLOW_REJECTIONS: usize = 2;
/// What the proxy logs when it refuses a model call itself.
const PROXY_REFUSAL_LOG: &str = "refused a model call";

#[test]
fn scaled_session_without_a_proxy_is_refused_at_40k() {
    let run = SmallWindowRun::start(40_000, Route::Direct);
    run.assert_refused_unmanaged();
}

#[test]
fn scaled_session_through_the_proxy_stays_inside_40k() {
    let run = SmallWindowRun::start(40_000, Route::Proxy);
    run.assert_window_guarantee(0.7);
}

#[test]
fn scaled_session_through_the_proxy_stays_inside_80k() {
    let run = SmallWindowRun::start(80_000, Route::Proxy);
    run.assert_window_guarantee(0.8);
}

/// One finished `claude -p` run of the step script.
struct SmallWindowRun {
    /// The simulator's (and the proxy's) window, in tokens.
    window_tokens: u64,
    route: Route,
    session: ClaudeSession,
}

impl SmallWindowRun {
    fn start(window_tokens: u64, route: Route) -> Self {
        let machine = Machine::fresh();
        let repo = machine.path("work/repo");
        step_logs::create(&repo);
        let script = Script::install(&machine, "small_window.json", &step_logs::script());
        assert_eq!(script.tool_calls, step_logs::STEPS);
        let setup = Setup {
            sim_window_tokens: window_tokens,
            token_scale: TOKEN_SCALE,
            proxy_window_tokens: (route == Route::Proxy).then_some(window_tokens),
            sim_historian: "honest",
        };
        let session = ClaudeSession::run(machine, &repo, &script, setup);
        let run = Self {
            window_tokens,
            route,
            session,
        };
        eprintln!("{}", run.summary());
        run
    }

    /// Unmanaged, the provider refuses the session within its first steps, and the refusal
    /// reaches Claude Code where [`Self::assert_window_guarantee`] looks for it: an API error
    /// in its transcript. This keeps the proxy runs' "no refusal" from passing because
    /// Claude Code stopped recording refusals there.
    fn assert_refused_unmanaged(&self) {
        let session = &self.session;
        assert!(
            !session.status.success()
                && session.transcript.len() < step_logs::STEPS
                && self.overflow_rejections().count() > 0
                && session
                    .api_errors
                    .iter()
                    .any(|error| error.contains("Prompt is too long")),
            "unmanaged, the provider must refuse the session before its end, and Claude Code \
             must record the refusal as an API error\n{}",
            self.diagnostics()
        );
    }

    /// The window guarantee, with `min_cache_read_share` as the floor for cache reads over
    /// all prompt tokens from the second main call on.
    fn assert_window_guarantee(&self, min_cache_read_share: f64) {
        let session = &self.session;
        let proxy_refusals = self.proxy_refusals();
        assert!(
            session.api_errors.is_empty() && proxy_refusals == 0,
            "refusals reached Claude Code: {:?}; the proxy logged {proxy_refusals} \
             `{PROXY_REFUSAL_LOG}`\n{}",
            session.api_errors,
            self.diagnostics()
        );
        let overflows = self.overflow_rejections().count();
        assert!(
            overflows <= MAX_OVERFLOW_REJECTIONS,
            "{overflows} upstream overflow rejections, more than {MAX_OVERFLOW_REJECTIONS}\n{}",
            self.diagnostics()
        );
        for call in &session.ledger {
            assert!(
                call.status == 200 || call.prompt_tokens > self.window_tokens,
                "upstream call {} ({}) was rejected with status {} though its {} tokens fit the \
                 {} window\n{}",
                call.seq,
                call.model,
                call.status,
                call.prompt_tokens,
                self.window_tokens,
                self.diagnostics()
            );
            assert!(
                call.status != 200 || call.prompt_tokens <= self.window_tokens,
                "the simulator served upstream call {} ({}) of {} tokens over the {} window\n{}",
                call.seq,
                call.model,
                call.prompt_tokens,
                self.window_tokens,
                self.diagnostics()
            );
        }
        assert!(
            session.status.success() && session.stdout.contains(step_logs::FINAL_ANSWER),
            "claude did not finish with the script's final answer ({}; `{}` means a scripted \
             turn's `when` did not match)\n{}",
            session.status,
            step_logs::FELL_THROUGH,
            self.diagnostics()
        );
        assert_eq!(
            session.transcript.len(),
            session.scripted_tool_calls,
            "one tool result per scripted tool call\n{}",
            self.diagnostics()
        );
        let share = session.cache_read_share();
        assert!(
            share >= min_cache_read_share,
            "cache-read share {share:.3} from the second main call on, below \
             {min_cache_read_share}\n{}",
            self.diagnostics()
        );
        store_check::assert_tool_results_stored(&session.store_path(), &session.transcript);
    }

    /// Upstream calls the simulator rejected as over the window.
    fn overflow_rejections(&self) -> impl Iterator<Item = &CallRecord> {
        self.session
            .ledger
            .iter()
            .filter(|call| call.status != 200 && call.prompt_tokens > self.window_tokens)
    }

    /// Model calls the proxy refused itself, from its log.
    fn proxy_refusals(&self) -> usize {
        self.session
            .proxy
            .as_ref()
            .map(Server::stderr)
            .unwrap_or_default()
            .matches(PROXY_REFUSAL_LOG)
            .count()
    }

    /// The largest prompt the simulator served.
    fn peak_served_prompt_tokens(&self) -> u64 {
        self.session
            .ledger
            .iter()
            .filter(|call| call.status == 200)
            .map(|call| call.prompt_tokens)
            .max()
            .unwrap_or(0)
    }

    /// One line of figures, printed after every run (visible with `--nocapture`).
    fn summary(&self) -> String {
        let session = &self.session;
        format!(
            "small window {} ({:?}, token scale {TOKEN_SCALE}): {}/{} steps, {} main calls of {} \
             upstream, {} overflow rejections, {} refusals ({} logged by the proxy), peak \
             served prompt {}, cache-read share {:.3}, claude ran {:.1}s",
            self.window_tokens,
            self.route,
            session.transcript.len(),
            session.scripted_tool_calls,
            session.main_calls().count(),
            session.ledger.len(),
            self.overflow_rejections().count(),
            session.api_errors.len(),
            self.proxy_refusals(),
            self.peak_served_prompt_tokens(),
            session.cache_read_share(),
            session.wall.as_secs_f64(),
        )
    }

    /// Everything a reader needs to see why a run failed.
    fn diagnostics(&self) -> String {
        self.session.diagnostics(&self.summary())
    }
}
