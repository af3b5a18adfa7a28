//! The real Codex CLI at a small window: `codex exec` runs [`STEPS`] shell steps in a scratch
//! repository through `magic-context serve` to `magic-context sim` on the Responses wire,
//! each step printing a distinct run of numbers (`seq`) that counts about 2.5K tokens, some
//! 100K tokens of tool output in all, well over the window.
//!
//! The run must finish with Codex's success exit and the script's final answer; every call
//! the simulator received must fit the window; every tool result Codex produced must be in
//! the proxy's store; the cache-read share from the second main call on (OpenAI's automatic
//! caching, keyed by `prompt_cache_key`) must hold its floor; Codex must never have
//! compacted by itself (no compaction in its rollout, no compaction request upstream); and
//! the proxy must have managed (main calls that shrank, which a client that only appends
//! never sends).
//!
//! The run prints one line of figures (visible with `--nocapture`).

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::Machine;
use crate::support::claude_session::Script;
use crate::support::codex_rollout;
use crate::support::codex_session::{CodexSession, SHELL_TOOL};
use crate::support::store_check;

/// How many steps (shell calls) the script makes.
const STEPS: usize = 40;
/// Numbers each step prints beyond its first: about 2.5K tokens of output.
const STEP_SPAN: usize = 800;
/// The window of the simulator and the proxy.
const WINDOW_TOKENS: u64 = 64_000;
/// The floor of the cache-read share from the second main call on.
const MIN_CACHE_READ_SHARE: f64 = 0.8;
/// The script's last turn starts with this.
const FINAL_ANSWER: &str = "FINAL-ANSWER:";
/// What the script answers when no turn matched (its `final_text`).
const FELL_THROUGH: &str = "SCRIPT-FELL-THROUGH";
/// What Codex's compaction request says (its last user message).
const CODEX_COMPACTION_PROMPT: &str = "CONTEXT CHECKPOINT COMPACTION";
/// The input item Codex's built-in provider compacts with.
const CODEX_COMPACTION_TRIGGER: &str = "compaction_trigger";
/// What the proxy logs when it forwards a Codex compaction request.
const PROXY_CODEX_COMPACTION_LOG: &str = "codex_compaction";

#[test]
fn codex_session_through_the_proxy_stays_inside_64k() {
    let machine = Machine::fresh();
    let repo = machine.path("work/repo");
    create_repo(&repo);
    let script = Script::install(&machine, "codex_steps.json", &script());
    assert_eq!(script.tool_calls, STEPS);
    let session = CodexSession::run(machine, &repo, &script, WINDOW_TOKENS);
    let summary = summary(&session);
    eprintln!("{summary}");
    let diagnostics = || session.diagnostics(&summary);

    assert!(
        session.status.success() && session.stdout.contains(FINAL_ANSWER),
        "codex did not finish with the script's final answer ({}; `{FELL_THROUGH}` means a \
         scripted turn's `when` did not match)\n{}",
        session.status,
        diagnostics()
    );
    assert_eq!(
        session.tool_results.len(),
        session.scripted_tool_calls,
        "one tool result per scripted step\n{}",
        diagnostics()
    );
    for call in &session.ledger {
        assert!(
            call.status == 200 && call.prompt_tokens <= WINDOW_TOKENS,
            "upstream call {} ({:?}) of {} tokens answered {} at the {WINDOW_TOKENS} window\n{}",
            call.seq,
            call.label,
            call.prompt_tokens,
            call.status,
            diagnostics()
        );
    }
    let own = codex_rollout::own_compactions(&session.rollout);
    assert!(
        own.is_empty(),
        "Codex compacted by itself: {own:?}\n{}",
        diagnostics()
    );
    let compaction_requests = session
        .upstream_bodies()
        .iter()
        .filter(|body| {
            body.contains(CODEX_COMPACTION_PROMPT) || body.contains(CODEX_COMPACTION_TRIGGER)
        })
        .count();
    assert!(
        compaction_requests == 0 && !session.proxy.stderr().contains(PROXY_CODEX_COMPACTION_LOG),
        "Codex asked for a compaction ({compaction_requests} upstream)\n{}",
        diagnostics()
    );
    assert!(
        session.shrinking_main_calls() > 0,
        "no main call shrank: the proxy never cut the conversation\n{}",
        diagnostics()
    );
    let share = session.cache_read_share();
    assert!(
        share >= MIN_CACHE_READ_SHARE,
        "cache-read share {share:.3} from the second main call on, below \
         {MIN_CACHE_READ_SHARE}\n{}",
        diagnostics()
    );
    store_check::assert_tool_results_stored(&session.store_path(), &session.tool_results);
}

/// One line of figures for the run.
fn summary(session: &CodexSession) -> String {
    format!(
        "codex small window {WINDOW_TOKENS}: exit {}, {}/{STEPS} tool results, {} main calls of \
         {} upstream, {} cuts, peak prompt {} of {WINDOW_TOKENS}, cache-read share {:.3}, \
         codex ran {:.1}s",
        session.status,
        session.tool_results.len(),
        session.main_calls().count(),
        session.ledger.len(),
        session.shrinking_main_calls(),
        session.peak_prompt_tokens(),
        session.cache_read_share(),
        session.wall.as_secs_f64(),
    )
}

/// A git repository with one commit, as the proxy's project identity expects.
fn create_repo(repo: &Path) {
    std::fs::create_dir_all(repo).unwrap();
    std::fs::write(repo.join("README.md"), "# steps\n").unwrap();
    let git = |args: &[&str]| {
        let output = Command::new("git")
            .args(args)
            .current_dir(repo)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    git(&["init", "-q"]);
    git(&["config", "user.email", "steps@example.com"]);
    git(&["config", "user.name", "Steps"]);
    git(&["config", "commit.gpgsign", "false"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "initial import"]);
}

/// The first and last number step `step` prints: a range no other step shares, so no output
/// duplicates another and only the window fit keeps the session inside the window.
fn step_range(step: usize) -> (usize, usize) {
    let first = step * 100_000;
    (first, first + STEP_SPAN)
}

/// The script's JSON: step 1 at once, step `n` once the last tool result holds step
/// `n − 1`'s last number (only its whole output does), the final answer after step
/// [`STEPS`].
fn script() -> String {
    let mut turns: Vec<Value> = (1..=STEPS)
        .map(|step| {
            let (first, last) = step_range(step);
            let content = json!([
                {"type": "text", "text": format!("Step {step}: printing its numbers.")},
                {"type": "tool_use", "name": SHELL_TOOL, "input": {"cmd": format!("seq {first} {last}")}},
            ]);
            match step {
                1 => json!({"content": content}),
                _ => json!({
                    "when": {"last_tool_result_contains": step_range(step - 1).1.to_string()},
                    "content": content,
                }),
            }
        })
        .collect();
    turns.push(json!({
        "when": {"last_tool_result_contains": step_range(STEPS).1.to_string()},
        "content": [{"type": "text", "text": format!("{FINAL_ANSWER} all {STEPS} steps ran.")}],
    }));
    let script = json!({
        "final_text": format!("{FELL_THROUGH}: a scripted turn did not match what Codex sent."),
        "turns": turns,
    });
    serde_json::to_string_pretty(&script).unwrap()
}
