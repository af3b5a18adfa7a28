//! Real clients with no MCP server of ours get the agent tools from the proxy: Pi on each of
//! its three wires, OpenCode (configured with a provider of its own, no MCP) on Anthropic and
//! Chat. The scripted model writes a memory, searches for it and answers, through `serve` to
//! `magic-context sim`. The two calls to our tools run in the proxy as hidden rounds; the
//! client reads one streamed answer (its SDK's parser takes the merged stream), never sees a
//! call it cannot run, and finishes with the model's answer.

use serde_json::{Value, json};

use std::path::Path;

use crate::support::Machine;
use crate::support::claude_session::{Route, Script};
use crate::support::client_run::MAIN_LABEL;
use crate::support::opencode_session::{self, OpencodeWire};
use crate::support::pi_session::{PiSession, Wire, create_repo};

/// The memory the model writes, and then finds.
const FACT: &str = "Crates in this workspace are named in kebab-case.";
/// The answer the script ends with.
const ANSWER: &str = "FINAL-ANSWER: crates are kebab-case.";
/// A window far above the session: nothing else is at play.
const WINDOW_TOKENS: u64 = 64_000;

#[test]
fn opencode_on_anthropic_gets_the_proxys_tools_as_hidden_rounds() {
    check_opencode(OpencodeWire::Anthropic);
}

#[test]
fn opencode_on_chat_gets_the_proxys_tools_as_hidden_rounds() {
    check_opencode(OpencodeWire::Chat);
}

#[test]
fn pi_on_anthropic_gets_the_proxys_tools_as_hidden_rounds() {
    check_pi(Wire::Anthropic);
}

#[test]
fn pi_on_chat_gets_the_proxys_tools_as_hidden_rounds() {
    check_pi(Wire::Chat);
}

#[test]
fn pi_on_responses_gets_the_proxys_tools_as_hidden_rounds() {
    check_pi(Wire::Responses);
}

/// The model's turns: a memory written, searched for once its result came back, and an
/// answer once the search found it.
fn script() -> String {
    let script = json!({
        "final_text": "SCRIPT-FELL-THROUGH: a scripted turn did not match.",
        "turns": [
            {"content": [
                {"type": "text", "text": "Saving what I learnt."},
                {"type": "tool_use", "name": "ctx_memory",
                 "input": {"action": "write", "category": "NAMING", "content": FACT}}]},
            {"when": {"last_tool_result_contains": "saved as memory"},
             "content": [{"type": "tool_use", "name": "ctx_search", "input": {"query": "kebab-case crates"}}]},
            {"when": {"last_tool_result_contains": FACT},
             "content": [{"type": "text", "text": ANSWER}]},
        ],
    });
    serde_json::to_string_pretty(&script).unwrap()
}

fn check_opencode(wire: OpencodeWire) {
    let machine = Machine::fresh();
    let repo = machine.path("work/repo");
    create_repo(&repo);
    let script = Script::install(&machine, "opencode_proxy_tools.json", &script());
    let run = opencode_session::run(machine, &repo, &script, WINDOW_TOKENS, wire);
    let diagnostics = run.diagnostics(&format!("opencode on {wire:?} with the proxy's tools"));
    assert!(run.status.success(), "OpenCode failed\n{diagnostics}");
    assert!(
        run.stdout.contains(ANSWER),
        "OpenCode printed the model's answer\n{diagnostics}"
    );
    assert!(
        run.tool_results.is_empty(),
        "OpenCode ran no tool: it never saw our calls\n{diagnostics}"
    );
    let bodies: Vec<Value> = run
        .servers
        .relay
        .log
        .bodies(MAIN_LABEL)
        .iter()
        .map(|body| serde_json::from_slice(body).unwrap())
        .collect();
    assert_rounds(&bodies.iter().collect::<Vec<_>>(), &diagnostics);
    assert_memory_stored(&run.machine, &repo);
}

fn check_pi(wire: Wire) {
    let machine = Machine::fresh();
    let repo = machine.path("work/repo");
    create_repo(&repo);
    let script = Script::install(&machine, "pi_proxy_tools.json", &script());
    let session = PiSession::run(machine, &repo, &script, wire, Route::Proxy, WINDOW_TOKENS);
    let diagnostics = session.diagnostics(&format!("pi on {wire:?} with the proxy's tools"));
    assert!(session.status.success(), "Pi failed\n{diagnostics}");
    assert!(
        session.stdout.contains(ANSWER),
        "Pi printed the model's answer\n{diagnostics}"
    );
    assert!(
        session.tool_results.is_empty(),
        "Pi ran no tool: it never saw our calls\n{diagnostics}"
    );
    let calls: Vec<&Value> = session.pi_bodies.iter().collect();
    assert_rounds(&calls, &diagnostics);
    assert_memory_stored(&session.machine, &repo);
}

/// Three upstream rounds, one per model turn, each offering our tools; the last holds the
/// memory write's result and the search's hit.
fn assert_rounds(calls: &[&Value], diagnostics: &str) {
    assert_eq!(
        calls.len(),
        3,
        "one upstream round per model turn\n{diagnostics}"
    );
    assert!(
        calls.iter().all(|body| offers_our_tools(body)),
        "every round carries our tools\n{diagnostics}"
    );
    let last = calls[2].to_string();
    assert!(
        last.contains("saved as memory") && last.matches(FACT).count() >= 2,
        "the last round holds the write's result and the search's hit\n{diagnostics}"
    );
}

/// The memory is stored for the client's project (the repository it ran in).
fn assert_memory_stored(machine: &Machine, repo: &Path) {
    let data = machine.path("data");
    let stored = machine
        .run_in(
            repo,
            &["memory", "list", "--json"],
            &[("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())],
        )
        .success()
        .stdout;
    assert!(stored.contains(FACT), "the memory is stored: {stored}");
}

/// Whether `body` offers `ctx_search` and `ctx_memory`, in its wire's tool shape.
fn offers_our_tools(body: &Value) -> bool {
    let names: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str().or(tool["function"]["name"].as_str()))
        .collect();
    names.contains(&"ctx_search") && names.contains(&"ctx_memory")
}
