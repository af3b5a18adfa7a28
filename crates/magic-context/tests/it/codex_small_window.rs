//! The real Codex CLI at a small window: `codex exec` runs [`STEPS`] shell steps in a scratch
//! repository through `magic-context serve` to `magic-context sim` on the Responses wire,
//! each step printing a distinct run of numbers (`seq`) that counts about 2.5K tokens, some
//! 100K tokens of tool output in all, well over the window.
//!
//! Beside the shared checks ([`assert_managed_run`]: Codex's success exit and the final
//! answer, no call over the window, the proxy cut the conversation, the cache-read share
//! under OpenAI's automatic caching, every tool result in the store), Codex must never have
//! compacted by itself: no compaction in its rollout, no compaction request upstream, none
//! forwarded by the proxy.
//!
//! A control run sends the same session straight to the simulator: the provider refuses it
//! before its end and Codex stops with an error, so the proxy run passes only by managing.
//!
//! The run prints one line of figures (visible with `--nocapture`).

use serde_json::json;

use mc_store::Store;

use crate::support::Machine;
use crate::support::claude_session::{Route, Script};
use crate::support::client_run::ClientRun;
use crate::support::codex_rollout;
use crate::support::codex_session::{CodexSession, SHELL_TOOL};
use crate::support::seq_steps::{SeqSteps, create_repo};
use crate::support::small_window_checks::assert_managed_run;

/// 40 steps of 801 numbers, about 2.5K tokens each.
const STEPS: SeqSteps = SeqSteps {
    steps: 40,
    span: 800,
};
/// The window of the simulator and the proxy.
const WINDOW_TOKENS: u64 = 64_000;
/// The floor of the cache-read share from the second main call on.
const MIN_CACHE_READ_SHARE: f64 = 0.8;
/// What Codex's compaction request says (its last user message).
const CODEX_COMPACTION_PROMPT: &str = "CONTEXT CHECKPOINT COMPACTION";
/// The input item Codex's built-in provider compacts with.
const CODEX_COMPACTION_TRIGGER: &str = "compaction_trigger";
/// What the proxy logs when it forwards a Codex compaction request.
const PROXY_CODEX_COMPACTION_LOG: &str = "codex_compaction";

/// Without the proxy, the provider refuses the session before its end and Codex gives up:
/// the window is small enough that only management gets the session through.
#[test]
fn codex_session_straight_to_the_simulator_overflows_64k() {
    let (session, summary) = run(Route::Direct);
    let run = &session.run;
    let refused = run
        .ledger
        .iter()
        .filter(|call| call.status != 200 && call.prompt_tokens > WINDOW_TOKENS)
        .count();
    assert!(
        !run.status.success() && refused > 0 && run.tool_results.len() < STEPS.steps,
        "unmanaged, the provider must refuse the session before its end\n{}",
        run.diagnostics(&summary)
    );
}

#[test]
fn codex_session_through_the_proxy_stays_inside_64k() {
    let (session, summary) = run(Route::Proxy);
    let run = &session.run;
    let diagnostics = run.diagnostics(&summary);

    assert_managed_run(run, WINDOW_TOKENS, MIN_CACHE_READ_SHARE, &diagnostics);
    let own = codex_rollout::own_compactions(&session.rollout);
    assert!(
        own.is_empty(),
        "Codex compacted by itself: {own:?}\n{diagnostics}"
    );
    let compaction_requests = run
        .upstream_bodies()
        .iter()
        .filter(|body| {
            body.contains(CODEX_COMPACTION_PROMPT) || body.contains(CODEX_COMPACTION_TRIGGER)
        })
        .count();
    assert!(
        compaction_requests == 0 && !run.proxy_log().contains(PROXY_CODEX_COMPACTION_LOG),
        "Codex asked for a compaction ({compaction_requests} upstream)\n{diagnostics}"
    );
    assert_usage_of_every_call(run, &diagnostics);
}

/// Every call of Codex's the provider answered is in the proxy's ledger with its usage, not
/// as a `client disconnected` cut: Codex closes its stream at `response.completed` without
/// reading to the end, and the call was whole by then.
fn assert_usage_of_every_call(run: &ClientRun, diagnostics: &str) {
    let served = run.main_calls().filter(|call| call.status == 200).count();
    let store = Store::open(run.store_path()).unwrap();
    let mut rows = Vec::new();
    // The ledger is written off the request path: wait for the last call's row.
    for _ in 0..250 {
        rows = store
            .read(|tx| {
                let mut rows = Vec::new();
                for session in tx.list_sessions(usize::MAX)? {
                    rows.extend(tx.calls(&session.id, usize::MAX)?);
                }
                Ok(rows)
            })
            .unwrap();
        rows.retain(|row| row.route == "openai_responses" && row.status == 200);
        if rows.len() >= served {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(rows.len(), served, "one row per served call\n{diagnostics}");
    let cut: Vec<_> = rows
        .iter()
        .filter(|row| row.error.is_some() || row.uncached_tokens.is_none())
        .collect();
    assert!(
        cut.is_empty(),
        "every served call's usage is recorded: {cut:?}\n{diagnostics}"
    );
}

/// Runs the script through `route`, printing its figures.
fn run(route: Route) -> (CodexSession, String) {
    let machine = Machine::fresh();
    let repo = machine.path("work/repo");
    create_repo(&repo);
    let text = STEPS.script(|command, _| (SHELL_TOOL, json!({"cmd": command})));
    let script = Script::install(&machine, "codex_steps.json", &text);
    assert_eq!(script.tool_calls, STEPS.steps);
    let session = CodexSession::run(machine, &repo, &script, WINDOW_TOKENS, route);
    let summary = session
        .run
        .summary(&format!("codex on responses ({route:?})"), WINDOW_TOKENS);
    eprintln!("{summary}");
    (session, summary)
}
