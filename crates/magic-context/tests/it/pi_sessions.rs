//! Pi names no session on the Anthropic and the Chat wire, so the proxy keys its sessions by
//! the conversation (a hash chain scoped by the project, else the system prompt). Two real Pi
//! runs in two folders, each its own git project, with the same first prompt, through one
//! proxy, must be two sessions, each holding its own run's tool results, and neither a fork
//! of the other.

use std::collections::{BTreeMap, BTreeSet};

use mc_core::Part;
use mc_store::Store;
use serde_json::json;

use crate::support::Machine;
use crate::support::claude_session::{Route, Script};
use crate::support::pi_session::{PiSession, Wire, create_repo};
use crate::support::transcript::ToolResult;

/// The proxy's window: large enough that nothing is managed away in these short runs.
const WINDOW_TOKENS: u64 = 64_000;
/// Each run's last answer starts with this.
const FINAL_ANSWER: &str = "FINAL-ANSWER:";

#[test]
fn two_pi_runs_on_anthropic_in_two_folders_are_two_sessions() {
    assert_two_runs_two_sessions(Wire::Anthropic);
}

#[test]
fn two_pi_runs_on_chat_in_two_folders_are_two_sessions() {
    assert_two_runs_two_sessions(Wire::Chat);
}

fn assert_two_runs_two_sessions(wire: Wire) {
    let machine = Machine::fresh();
    let (first_repo, second_repo) = (machine.path("work/first"), machine.path("work/second"));
    create_repo(&first_repo);
    create_repo(&second_repo);
    let script = Script::install(&machine, "pi_two_runs.json", &script());
    let first = PiSession::run(
        machine,
        &first_repo,
        &script,
        wire,
        Route::Proxy,
        WINDOW_TOKENS,
    );
    let (second_status, second_results) = first.run_again(&second_repo, "home-second", "pi-second");
    let second_stdout = std::fs::read_to_string(first.machine.path("pi-second.stdout")).unwrap();
    let diagnostics = || first.diagnostics(&format!("two Pi runs on {wire:?}"));
    assert!(
        first.status.success() && first.stdout.contains(&format!("{FINAL_ANSWER} run 1")),
        "the first run did not finish\n{}",
        diagnostics()
    );
    assert!(
        second_status.success() && second_stdout.contains(&format!("{FINAL_ANSWER} run 2")),
        "the second run did not finish ({second_status}): {second_stdout}\n{}",
        diagnostics()
    );
    let stored = stored_results_by_session(&first);
    let expected: BTreeSet<BTreeSet<String>> = [&first.tool_results, &second_results]
        .into_iter()
        .map(|results| ids(results))
        .collect();
    let found: BTreeSet<BTreeSet<String>> = stored.values().cloned().collect();
    assert!(
        stored.len() == 2 && found == expected,
        "each run must be a session of its own holding its results: stored {stored:?}, runs \
         {expected:?}\n{}",
        diagnostics()
    );
}

/// The call ids of `results`.
fn ids(results: &[ToolResult]) -> BTreeSet<String> {
    results
        .iter()
        .map(|result| result.tool_use_id.clone())
        .collect()
}

/// Each stored session's id, with the call ids of the tool results it holds.
fn stored_results_by_session(session: &PiSession) -> BTreeMap<String, BTreeSet<String>> {
    let store = Store::open(session.store_path()).unwrap();
    store
        .read(|tx| {
            let mut stored = BTreeMap::new();
            for record in tx.list_sessions(usize::MAX)? {
                let mut calls = BTreeSet::new();
                for row in tx.messages(&record.id, ..)? {
                    for part in row.message.parts {
                        if let Part::ToolResult { call_id, .. } = part {
                            calls.insert(call_id);
                        }
                    }
                }
                stored.insert(record.id.to_string(), calls);
            }
            Ok(stored)
        })
        .unwrap()
}

/// Two runs of two `bash` calls and a final answer each; the second run's first call plays
/// on its first request (the first run has ended by then), each later call once the result
/// it waits for came back.
fn script() -> String {
    let mut turns = Vec::new();
    for run in 1..=2 {
        let first = format!("run {run}: first");
        let second = format!("run {run}: second");
        turns.push(json!({"content": [
            {"type": "tool_use", "name": "bash", "input": {"command": format!("echo '{first}'")}},
        ]}));
        turns.push(json!({
            "when": {"last_tool_result_contains": first},
            "content": [{"type": "tool_use", "name": "bash", "input": {"command": format!("echo '{second}'")}}],
        }));
        turns.push(json!({
            "when": {"last_tool_result_contains": second},
            "content": [{"type": "text", "text": format!("{FINAL_ANSWER} run {run} done.")}],
        }));
    }
    serde_json::to_string_pretty(&json!({"final_text": "SCRIPT-FELL-THROUGH", "turns": turns}))
        .unwrap()
}
