//! The real Pi on the Chat wire, when the model first calls one of the proxy's tools (a
//! hidden round) and then Pi's own `bash`: Pi's next request carries its tool-call message
//! with `"content": null` (what OpenAI's SDK streams produce), and the proxy must put the
//! hidden round back before it. When it did not, the upstream got a history without our call,
//! the stored history diverged and the one conversation forked into several sessions.

use mc_core::Part;
use mc_store::Store;
use serde_json::{Value, json};

use crate::support::Machine;
use crate::support::claude_session::{Route, Script};
use crate::support::pi_session::{PiSession, Wire, create_repo};

/// The memory the model writes in the hidden round.
const FACT: &str = "The step runner's tests live under tests/steps.";
/// What Pi's `bash` prints, which the last turn waits for.
const ECHOED: &str = "hi-from-bash";
/// The answer the script ends with.
const ANSWER: &str = "FINAL-ANSWER: bash ran after the hidden round.";
/// A window far above the session: nothing else is at play.
const WINDOW_TOKENS: u64 = 64_000;

/// A memory written (our tool, hidden), then Pi's `bash` once its result came back, then an
/// answer once `bash` printed.
fn script() -> String {
    let script = json!({
        "final_text": "SCRIPT-FELL-THROUGH: a scripted turn did not match.",
        "turns": [
            {"content": [{"type": "tool_use", "name": "ctx_memory",
                "input": {"action": "write", "category": "PROJECT_RULES", "content": FACT}}]},
            {"when": {"last_tool_result_contains": "saved as memory"},
             "content": [{"type": "tool_use", "name": "bash", "input": {"command": format!("echo {ECHOED}")}}]},
            {"when": {"last_tool_result_contains": ECHOED},
             "content": [{"type": "text", "text": ANSWER}]},
        ],
    });
    serde_json::to_string_pretty(&script).unwrap()
}

#[test]
fn pi_on_chat_keeps_one_session_when_a_hidden_round_precedes_its_own_tool() {
    let machine = Machine::fresh();
    let repo = machine.path("work/repo");
    create_repo(&repo);
    let script = Script::install(&machine, "pi_hidden_then_bash.json", &script());
    let session = PiSession::run(
        machine,
        &repo,
        &script,
        Wire::Chat,
        Route::Proxy,
        WINDOW_TOKENS,
    );
    let diagnostics = session.diagnostics("pi on Chat: a hidden round, then bash");
    assert!(session.status.success(), "Pi failed\n{diagnostics}");
    assert!(
        session.stdout.contains(ANSWER),
        "Pi printed the model's answer\n{diagnostics}"
    );
    assert_eq!(
        session.tool_results.len(),
        1,
        "Pi ran its bash once and never saw our call\n{diagnostics}"
    );

    // Upstream: the hidden round, the round that called bash, and Pi's next request with
    // the hidden round put back before Pi's own tool-call message, which keeps its null.
    let calls = &session.pi_bodies;
    assert_eq!(calls.len(), 3, "{diagnostics}");
    let messages = calls[2]["messages"].as_array().unwrap();
    let called = |name: &str| {
        messages.iter().position(|message| {
            message["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|call| call["function"]["name"] == name)
        })
    };
    let (Some(ours), Some(bash)) = (called("ctx_memory"), called("bash")) else {
        panic!("the hidden round went back before bash: {messages:?}\n{diagnostics}");
    };
    assert!(ours < bash, "{messages:?}");
    assert!(
        messages[ours + 1]["content"]
            .as_str()
            .is_some_and(|text| text.contains("saved as memory")),
        "{messages:?}"
    );
    assert_eq!(
        messages[bash].get("content"),
        Some(&Value::Null),
        "Pi's content: null goes up as null: {}",
        messages[bash]
    );

    // The proxy's store holds one conversation, with no fork.
    let store = Store::open(session.store_path()).unwrap();
    let sessions = store.read(|tx| tx.list_sessions(usize::MAX)).unwrap();
    let ids: Vec<String> = sessions
        .iter()
        .map(|record| record.id.to_string())
        .collect();
    assert_eq!(ids.len(), 1, "one session: {ids:?}\n{diagnostics}");
    let stored_calls: usize = store
        .read(|tx| tx.messages(&sessions[0].id, ..))
        .unwrap()
        .iter()
        .flat_map(|row| &row.message.parts)
        .filter(|part| matches!(part, Part::ToolCall { .. }))
        .count();
    assert_eq!(stored_calls, 2, "our call and bash, stored once each");
}
