//! The real OpenCode CLI at a small window, on the Anthropic and on the Chat wire: `opencode
//! run` runs [`STEPS`] bash steps in a scratch repository through `magic-context serve` to
//! `magic-context sim`, each step printing a distinct run of numbers (`seq`) that counts
//! about 2.5K tokens, some 100K tokens of tool output in all, well over the window.
//!
//! Beside the shared checks ([`assert_managed_run`]: OpenCode's success exit and the final
//! answer, no call over the window, the proxy cut the conversation, the cache-read share
//! under the wire's caching rules, every tool result in the store), OpenCode must never have
//! compacted by itself: no summarization call upstream, none forwarded by the proxy.
//!
//! Each run prints one line of figures (visible with `--nocapture`).

use serde_json::json;

use crate::support::Machine;
use crate::support::claude_session::Script;
use crate::support::client_run::ClientRun;
use crate::support::opencode_session::{self, OpencodeWire, SHELL_TOOL};
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
/// How OpenCode's summarization call opens its system prompt.
const OPENCODE_COMPACTION_PROMPT: &str = "You are a context summarization agent";
/// What the proxy logs when it forwards an OpenCode summarization call.
const PROXY_OPENCODE_COMPACTION_LOG: &str = "opencode_compaction";

#[test]
fn opencode_on_anthropic_through_the_proxy_stays_inside_64k() {
    assert_managed_without_own_compaction(&run(OpencodeWire::Anthropic));
}

#[test]
fn opencode_on_chat_through_the_proxy_stays_inside_64k() {
    assert_managed_without_own_compaction(&run(OpencodeWire::Chat));
}

fn run(wire: OpencodeWire) -> (ClientRun, String) {
    let machine = Machine::fresh();
    let repo = machine.path("work/repo");
    create_repo(&repo);
    let text = STEPS.script(|command, step| {
        let input = json!({"command": command, "description": format!("Print step {step}")});
        (SHELL_TOOL, input)
    });
    let script = Script::install(&machine, "opencode_steps.json", &text);
    assert_eq!(script.tool_calls, STEPS.steps);
    let run = opencode_session::run(machine, &repo, &script, WINDOW_TOKENS, wire);
    let summary = run.summary(&format!("opencode on {wire:?}"), WINDOW_TOKENS);
    eprintln!("{summary}");
    (run, summary)
}

fn assert_managed_without_own_compaction((run, summary): &(ClientRun, String)) {
    let diagnostics = run.diagnostics(summary);
    assert_managed_run(run, WINDOW_TOKENS, MIN_CACHE_READ_SHARE, &diagnostics);
    let compaction_requests = run
        .upstream_bodies()
        .iter()
        .filter(|body| body.contains(OPENCODE_COMPACTION_PROMPT))
        .count();
    assert!(
        compaction_requests == 0 && !run.proxy_log().contains(PROXY_OPENCODE_COMPACTION_LOG),
        "OpenCode compacted by itself ({compaction_requests} summarization calls \
         upstream)\n{diagnostics}"
    );
}
