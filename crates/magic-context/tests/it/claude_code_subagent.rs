//! A Claude Code Task subagent with the real client: Claude Code runs through `magic-context
//! serve` to `magic-context sim`, whose script has the main conversation read [`STEPS`] work
//! logs with Bash, then hand the next [`STEPS`] to a Task subagent (`general-purpose`),
//! which reads them in its own conversation and reports; the main conversation then ends.
//!
//! Both conversations carry Claude Code's one session id. The run must show: the subagent's
//! conversation is stored as a subagent of the main one (its system prompt is a built-in
//! agent's); the main conversation keeps one lane (every one of its requests extended the
//! same session, no fork); the historian summarises the main conversation (its history is
//! large enough, in a 60K window, to trigger runs) but never runs for the subagent, whose
//! history is as large; and the subagent's head carries no compartment history.
//!
//! A run takes about a minute (Claude Code runs each Bash step); set `MC_CLAUDE_BIN` to skip
//! the npm install of Claude Code (see [`crate::claude_code`]).

use std::time::{Duration, Instant};

use mc_core::{SessionId, SessionMode};
use mc_store::{SessionRecord, Store};
use serde_json::{Value, json};

use crate::claude_code_historian::work_logs::{self, FELL_THROUGH, FINAL_ANSWER};
use crate::support::Machine;
use crate::support::claude_session::{ClaudeSession, Script, Setup};

/// Logs each conversation reads: enough history beyond the protected live tail (the newest
/// 20 tags, about 10 steps) for the historian's trigger in a 60K window.
const STEPS: usize = 18;
/// The window of the simulator and the proxy, in tokens.
const WINDOW_TOKENS: u64 = 60_000;
/// The task's prompt starts with this; only the subagent's first message holds it.
const TASK_MARKER: &str = "SUBTASK-JOURNALS";
/// The subagent's last answer, which Claude Code returns to the main conversation.
const REPORT: &str = "SUBAGENT-REPORT:";
/// How long the historian may take to publish the main conversation's run once the client
/// is done.
const HISTORIAN_WAIT: Duration = Duration::from_secs(60);

/// A Bash step reading log `step`, waiting for `when` (if any).
fn read_step(step: usize, when: Option<Value>) -> Value {
    let content = json!([
        {"type": "text", "text": format!("Step {step}: reading its journal.")},
        {"type": "tool_use", "name": "Bash", "input": {
            "command": format!("cat {}", work_logs::log_path(step)),
            "description": format!("Show the journal of step {step}"),
        }},
    ]);
    match when {
        Some(when) => json!({"when": when, "content": content}),
        None => json!({"content": content}),
    }
}

/// The script: the main conversation's steps `1..=STEPS`, the Task call, the subagent's
/// steps after them, its report, the main conversation's final answer.
fn script() -> String {
    let total = 2 * STEPS;
    let after =
        |step: usize| json!({"last_tool_result_contains": work_logs::last_line(step, total)});
    let mut turns: Vec<Value> = (1..=STEPS)
        .map(|step| read_step(step, (step > 1).then(|| after(step - 1))))
        .collect();
    turns.push(json!({
        "when": after(STEPS),
        "content": [
            {"type": "text", "text": "Handing the rest to a helper."},
            {"type": "tool_use", "name": "Task", "input": {
                "description": "Read the remaining journals",
                "prompt": format!("{TASK_MARKER}: read the journals from step {} to {total} one by one and report.", STEPS + 1),
                "subagent_type": "general-purpose",
            }},
        ],
    }));
    turns.push(read_step(
        STEPS + 1,
        Some(json!({"last_user_text_contains": TASK_MARKER})),
    ));
    turns.extend((STEPS + 2..=total).map(|step| read_step(step, Some(after(step - 1)))));
    turns.push(json!({
        "when": after(total),
        "content": [{"type": "text", "text": format!("{REPORT} journals {} to {total} were read.", STEPS + 1)}],
    }));
    turns.push(json!({
        "when": {"last_tool_result_contains": REPORT},
        "content": [{"type": "text", "text": format!("{FINAL_ANSWER} all {total} journals were read.")}],
    }));
    serde_json::to_string_pretty(&json!({
        "final_text": format!("{FELL_THROUGH}: a scripted turn did not match what Claude Code sent."),
        "turns": turns,
    }))
    .unwrap()
}

#[test]
fn a_task_subagent_gets_its_own_session_without_history_and_the_main_one_keeps_its_lane() {
    let machine = Machine::fresh();
    let repo = machine.path("work/repo");
    work_logs::create(&repo, 2 * STEPS);
    let script = Script::install(&machine, "subagent.json", &script());
    let setup = Setup {
        sim_window_tokens: WINDOW_TOKENS,
        token_scale: 1.0,
        proxy_window_tokens: Some(WINDOW_TOKENS),
        sim_historian: "honest",
    };
    let session = ClaudeSession::run(machine, &repo, &script, setup);
    assert!(
        session.status.success() && session.stdout.contains(FINAL_ANSWER),
        "{}",
        session.diagnostics("Claude Code did not finish the script")
    );
    let store = Store::open(session.store_path()).unwrap();
    let sessions = store.read(|tx| tx.list_sessions(usize::MAX)).unwrap();
    let first_text = |record: &SessionRecord| -> String {
        store
            .read(|tx| tx.messages(&record.id, 0..1))
            .unwrap()
            .first()
            .map(|message| mc_core::joined_texts(&message.message.parts))
            .unwrap_or_default()
    };
    let main: Vec<&SessionRecord> = sessions
        .iter()
        .filter(|record| first_text(record).contains("Work through the repository"))
        .collect();
    let subagents: Vec<&SessionRecord> = sessions
        .iter()
        .filter(|record| first_text(record).contains(TASK_MARKER))
        .collect();
    let summary = format!("{sessions:#?}\n{}", session.diagnostics(""));
    // The main conversation kept one lane: one session, no fork of it.
    assert_eq!((main.len(), subagents.len()), (1, 1), "{summary}");
    let (main, subagent) = (main[0], subagents[0]);
    assert_eq!(
        (main.mode, main.spawned_by.as_ref(), main.fork.as_ref()),
        (SessionMode::Primary, None, None),
        "{summary}"
    );
    assert_eq!(
        (subagent.mode, subagent.spawned_by.as_ref()),
        (SessionMode::Subagent, Some(&main.id)),
        "{summary}"
    );
    let client_part = |id: &SessionId| {
        id.as_str()
            .rsplit_once('-')
            .map(|(client, _)| client.to_owned())
    };
    assert_eq!(
        client_part(&main.id),
        client_part(&subagent.id),
        "one client session id"
    );
    let main_runs = wait_for_historian_run(&store, &main.id);
    assert!(
        main_runs > 0,
        "the main conversation was summarised: {summary}"
    );
    let (subagent_runs, compartments, head) = store
        .read(|tx| {
            Ok((
                tx.historian_runs(&subagent.id, usize::MAX)?.len(),
                tx.compartments(&subagent.id)?.len(),
                tx.engine_state(&subagent.id)?,
            ))
        })
        .unwrap();
    let state: Value = serde_json::from_str(&head.unwrap()).unwrap();
    let m0 = state["m0"].as_str().unwrap();
    assert_eq!(
        (subagent_runs, compartments),
        (0, 0),
        "no historian for the subagent: {summary}"
    );
    assert!(m0.contains("<history>\n</history>"), "{m0}");
    let subagent_messages = store.read(|tx| tx.message_count(&subagent.id)).unwrap();
    assert!(
        subagent_messages >= 2 * STEPS as u64,
        "the subagent read its {STEPS} journals in its own session: {subagent_messages}"
    );
}

/// The historian runs of `session` once at least one is recorded, waiting up to
/// [`HISTORIAN_WAIT`] (a run started by the session's last requests may still be in flight).
fn wait_for_historian_run(store: &Store, session: &SessionId) -> usize {
    let started = Instant::now();
    loop {
        let runs = store
            .read(|tx| tx.historian_runs(session, usize::MAX))
            .unwrap()
            .len();
        if runs > 0 || started.elapsed() > HISTORIAN_WAIT {
            return runs;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
