//! An OpenCode child session with the real client: `opencode run` through `magic-context
//! serve` to `magic-context sim`, whose script has the main conversation call OpenCode's
//! task tool; OpenCode runs the task in a child session of its own (its own `x-session-id`,
//! the parent's in `x-parent-session-id`), whose answer returns to the main conversation.
//! The store must hold the child as a subagent of the main session, which stays primary.

use mc_core::SessionMode;
use mc_store::Store;
use serde_json::json;

use crate::support::Machine;
use crate::support::claude_session::Script;
use crate::support::opencode_session::{self, OpencodeWire};

/// The task's prompt starts with this; only the child session's first message holds it.
const TASK_MARKER: &str = "SUBTASK-LOADER";
/// The child's answer, which OpenCode returns to the main conversation.
const REPORT: &str = "CHILD-REPORT: the config is loaded in src/config.rs.";
/// The main conversation's last answer.
const DONE: &str = "MAIN-DONE";

#[test]
fn an_opencode_task_runs_in_a_child_session_stored_as_a_subagent() {
    let machine = Machine::fresh();
    let repo = machine.path("work/repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("README.md"), "# loader\n").unwrap();
    crate::support::git_repo::commit_all(&repo);
    let script = json!({
        "final_text": "SCRIPT-FELL-THROUGH",
        "turns": [
            {"when": {"last_user_text_contains": "Work through the steps."}, "content": [
                {"type": "text", "text": "Delegating."},
                {"type": "tool_use", "name": "task", "input": {
                    "description": "Find the loader",
                    "prompt": format!("{TASK_MARKER}: find where the config is loaded."),
                    "subagent_type": "general",
                }},
            ]},
            {"when": {"last_user_text_contains": TASK_MARKER},
             "content": [{"type": "text", "text": REPORT}]},
            {"when": {"last_tool_result_contains": "CHILD-REPORT"},
             "content": [{"type": "text", "text": DONE}]},
        ],
    });
    let script = Script::install(&machine, "opencode_task.json", &script.to_string());
    let run = opencode_session::run(machine, &repo, &script, 200_000, OpencodeWire::Anthropic);
    let diagnostics = run.diagnostics("opencode with a task");
    assert!(
        run.status.success() && run.stdout.contains(DONE),
        "{diagnostics}"
    );
    let store = Store::open(run.machine.path("data/context.db")).unwrap();
    let sessions = store.read(|tx| tx.list_sessions(usize::MAX)).unwrap();
    let subagents: Vec<_> = sessions
        .iter()
        .filter(|session| session.mode == SessionMode::Subagent)
        .collect();
    let primary: Vec<_> = sessions
        .iter()
        .filter(|session| session.mode == SessionMode::Primary)
        .collect();
    assert_eq!(
        (primary.len(), subagents.len()),
        (1, 1),
        "{sessions:#?}\n{diagnostics}"
    );
    assert_eq!(subagents[0].spawned_by.as_ref(), Some(&primary[0].id));
    assert_ne!(
        subagents[0].id.as_str().split('-').nth(1),
        primary[0].id.as_str().split('-').nth(1),
        "the child runs under a session id of its own"
    );
}
