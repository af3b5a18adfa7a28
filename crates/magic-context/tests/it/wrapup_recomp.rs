//! `wrapup` and `recomp` against a real `magic-context sim` configured as the historian's
//! endpoint, over a store seeded through the engine: what they publish, the flush they
//! request, and what the session's next pass renders from it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use mc_core::breakpoints::CacheTtlChoice;
use mc_core::config::Config;
use mc_core::head::Compartment;
use mc_core::pass_plan::{BustCause, PassKind};
use mc_core::{Host, Message, Part, Role, SessionId, joined_texts};
use mc_engine::{Engine, PassOutcome, PassRequest};
use mc_store::Store;
use serde_json::{Value, json};

use crate::support::Machine;
use crate::support::servers::Server;

const SESSION: &str = "sess-history";
const START_MS: u64 = 1_795_952_640_000;
/// Turns of the seeded session: enough raw history for several historian runs.
const TURNS: usize = 40;

/// The task, then `TURNS` turns of a Bash call and its long result; every fifth result
/// carries a new request of the user's, so the history has several episodes. One tag per
/// message (the assistant's text, the result; a request adds one).
fn conversation() -> Vec<Message> {
    let mut messages = vec![Message::new(
        Role::User,
        vec![Part::text("Port the parser to the new tokenizer.")],
    )];
    for turn in 0..TURNS {
        let id = format!("toolu_{turn}");
        messages.push(Message::new(
            Role::Assistant,
            vec![
                Part::text(format!("Running the parser tests, step {turn}.")),
                Part::ToolCall {
                    id: id.clone(),
                    name: "Bash".into(),
                    input: json!({"command": format!("cargo test -p parser step_{turn}")}),
                },
            ],
        ));
        let output: String = (0..120)
            .map(|line| format!("test parser::case_{turn}_{line} ... ok\n"))
            .collect();
        let mut parts = vec![Part::ToolResult {
            call_id: id,
            content: vec![Part::text(output)],
            is_error: false,
        }];
        if turn % 5 == 2 {
            parts.push(Part::text(format!("Now handle module m{turn} as well.")));
        }
        messages.push(Message::new(Role::User, parts));
    }
    messages
}

fn count(text: &str) -> u64 {
    text.len() as u64 / 4
}

/// One engine pass over `messages`, as the proxy would run it on the session's next request.
fn pass(data: &Path, messages: &[Message], at_ms: u64) -> PassOutcome {
    let engine = Engine::new(
        Store::open(data.join("context.db")).unwrap(),
        Config::default(),
    );
    engine
        .pass(&PassRequest {
            session: &SessionId::new(SESSION).unwrap(),
            host: Host::ClaudeCode,
            mode: mc_core::SessionMode::Primary,
            spawned_by: None,
            continues: None,
            project: None,
            model: "claude-sonnet-4-5",
            prefix_identity: "system",
            system_blocks: 1,
            messages,
            chain: None,
            now_ms: START_MS + at_ms,
            usable_window: Some(200_000),
            fixed_tokens: 0,
            last_usage_tokens: None,
            last_usage_pass: None,
            operator_flush: false,
            reduce_tool: false,
            project_docs: &[],
            client_ttl: CacheTtlChoice::Default,
            count_text: &count,
        })
        .unwrap()
}

fn store(data: &Path) -> Store {
    Store::open(data.join("context.db")).unwrap()
}

fn sid() -> SessionId {
    SessionId::new(SESSION).unwrap()
}

fn compartments(data: &Path) -> Vec<Compartment> {
    store(data).read(|tx| tx.compartments(&sid())).unwrap()
}

/// The session's engine state as stored, for its flags.
fn engine_state(data: &Path) -> Value {
    let json = store(data).read(|tx| tx.engine_state(&sid())).unwrap();
    serde_json::from_str(&json.unwrap()).unwrap()
}

/// A machine whose store holds the seeded session after one pass, and a script for the sim.
fn seeded() -> (Machine, PathBuf, Vec<Message>) {
    let machine = Machine::fresh();
    let data = machine.path("data");
    let messages = conversation();
    pass(&data, &messages, 0);
    std::fs::write(
        machine.path("script.json"),
        r#"{"turns": [], "final_text": "ok"}"#,
    )
    .unwrap();
    (machine, data, messages)
}

/// Points the historian at `sim` in the user's configuration file.
fn use_historian_at(machine: &Machine, sim: &Server) {
    let file = machine.user_file();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let config = json!({"historian": {
        "endpoint": sim.base_url,
        "wire": "anthropic",
        "model": "claude-haiku-4-5",
    }});
    std::fs::write(file, config.to_string()).unwrap();
}

fn env(data: &Path) -> [(&'static str, &OsStr); 1] {
    [("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())]
}

fn titles(compartments: &[Compartment]) -> Vec<&str> {
    compartments.iter().map(|c| c.title.as_str()).collect()
}

/// A compartment with only a title that matters.
fn old(start: u64, end: u64, title: &str) -> Compartment {
    Compartment {
        start_ordinal: start,
        end_ordinal: end,
        start_ms: START_MS,
        end_ms: START_MS,
        title: title.into(),
        importance: 50,
        episode: "feature".into(),
        tiers: [
            format!("{title}, in full."),
            format!("{title}, condensed."),
            format!("{title}, a paragraph."),
            format!("{title}."),
        ],
        quotes: Vec::new(),
        index: mc_core::head::RangeIndex::default(),
    }
}

#[test]
fn wrapup_summarises_all_but_the_kept_tail_and_the_next_pass_lands_it() {
    let (machine, data, messages) = seeded();
    let sim = Server::sim_historian(&machine.path("script.json"), "honest");
    use_historian_at(&machine, &sim);
    let run = machine
        .run(
            &["wrapup", "--session", SESSION, "--keep", "4", "--json"],
            &env(&data),
        )
        .success();
    let report = run.json();
    // The newest 4 tags are the last two turns' four messages: everything before them is
    // summarised, the last episode included (the operator closed it).
    let live_from = messages.len() as u64 - 4;
    let stored = compartments(&data);
    let historian_calls = sim
        .ledger()
        .iter()
        .filter(|call| call.model == "claude-haiku-4-5")
        .count();
    assert!(report["runs"].as_u64().unwrap() >= 2, "{report}");
    assert_eq!(report["runs"].as_u64().unwrap(), historian_calls as u64);
    assert_eq!(report["calls"], report["runs"]);
    assert_eq!(report["ending"], "done");
    assert_eq!(report["failure"], Value::Null);
    assert_eq!(report["model"], "claude-haiku-4-5");
    assert_eq!(report["keep_tags"], 4);
    assert_eq!(report["covered"], json!([0, live_from - 1]));
    assert_eq!(report["summarised_until"], live_from);
    assert_eq!(report["compartments"], stored.len());
    assert!(report["input_tokens"].as_u64().unwrap() > 0);
    assert_eq!(report["flush_requested"], true);
    assert_eq!(stored.last().unwrap().end_ordinal, live_from - 1);
    assert_eq!(engine_state(&data)["flush_requested"], true);

    // The session's next request: the flush busts, the boundary moves past the new
    // compartments (passing the task, so m[0] folds with them) and the kept tail stays raw.
    let mut next = messages.clone();
    next.push(Message::new(Role::User, vec![Part::text("Any failures?")]));
    let outcome = pass(&data, &next, 60_000);
    assert_eq!(outcome.plan.kind, PassKind::HardFold, "{:?}", outcome.plan);
    let m0 = joined_texts(&outcome.messages[0].parts);
    for title in titles(&stored) {
        assert!(m0.contains(title), "m[0] lacks {title:?}:\n{m0}");
    }
    assert_eq!(
        outcome.messages.len(),
        2 + (next.len() - live_from as usize)
    );
    assert_eq!(engine_state(&data)["flush_requested"], false);

    // The new request added a tag, so keeping 5 keeps the same messages raw: nothing is
    // left to summarise, and no flush is requested for nothing.
    let again = machine
        .run(
            &["wrapup", "--session", SESSION, "--keep", "5"],
            &env(&data),
        )
        .success();
    assert!(
        again
            .stdout
            .contains("0 historian runs: published 0 compartments"),
        "{}",
        again.stdout
    );
    assert!(
        again.stdout.contains("no flush requested"),
        "{}",
        again.stdout
    );
}

#[test]
fn recomp_rebuilds_from_the_raw_log_swaps_whole_and_the_next_pass_refolds_m0() {
    let (machine, data, messages) = seeded();
    store(&data)
        .write(|tx| {
            tx.append_compartments(
                &sid(),
                &[old(0, 10, "Old start"), old(11, 20, "Old end")],
                0,
            )
        })
        .unwrap();
    let mut next = messages.clone();
    next.push(Message::new(Role::User, vec![Part::text("Go on.")]));
    let flush = Engine::new(store(&data), Config::default());
    flush.request_flush(&sid()).unwrap();
    let before = pass(&data, &next, 60_000);
    assert!(joined_texts(&before.messages[0].parts).contains("Old start"));

    let sim = Server::sim_historian(&machine.path("script.json"), "honest");
    use_historian_at(&machine, &sim);
    let report = machine
        .run(&["recomp", "--session", SESSION, "--json"], &env(&data))
        .success()
        .json();
    let rebuilt = compartments(&data);
    assert_eq!(report["resumed_from"], 0);
    assert_eq!(report["ending"], "done");
    assert_eq!(report["covered"], json!([0, 20]));
    assert_eq!(report["target_until"], 21);
    assert_eq!(report["staged_until"], 0, "the staging area is emptied");
    assert_eq!(
        report["swapped"],
        json!({"replaced": 2, "installed": rebuilt.len(), "covered_until": 21})
    );
    assert_eq!(report["flush_requested"], true);
    assert_eq!(rebuilt.first().unwrap().start_ordinal, 0);
    assert_eq!(rebuilt.last().unwrap().end_ordinal, 20);
    assert!(!titles(&rebuilt).contains(&"Old start"));
    let state = engine_state(&data);
    assert_eq!(
        (&state["flush_requested"], &state["head_rebuild_requested"]),
        (&json!(true), &json!(true))
    );

    // The next pass folds m[0] from the new compartments: nothing of the old ones is left.
    let after = pass(&data, &next, 120_000);
    assert_eq!(after.plan.kind, PassKind::HardFold);
    assert_eq!(after.plan.cause, Some(BustCause::StructuralEdit));
    let m0 = joined_texts(&after.messages[0].parts);
    for title in titles(&rebuilt) {
        assert!(m0.contains(title), "m[0] lacks {title:?}:\n{m0}");
    }
    assert!(!m0.contains("Old start") && !m0.contains("Old end"), "{m0}");
    assert_eq!(
        after.messages.len(),
        before.messages.len(),
        "the boundary stays"
    );
    assert_eq!(engine_state(&data)["head_rebuild_requested"], false);
}

#[test]
fn an_interrupted_recomp_keeps_the_old_history_and_resumes_from_its_staged_end() {
    let (machine, data, _) = seeded();
    store(&data)
        .write(|tx| {
            tx.append_compartments(&sid(), &[old(0, 20, "Old")], 0)?;
            // What an earlier recomp staged before it was stopped.
            tx.stage_compartments(&sid(), &[old(0, 4, "Staged earlier")], 0)
        })
        .unwrap();

    // A model whose answers break the schema: the run fails, nothing is swapped or flushed.
    let broken = Server::sim_historian(&machine.path("script.json"), "garbage");
    use_historian_at(&machine, &broken);
    let failed = machine.run(&["recomp", "--session", SESSION, "--json"], &env(&data));
    assert_eq!(failed.code, Some(1), "{}", failed.stderr);
    let report = failed.json();
    assert_eq!(report["ending"], "failed");
    assert!(
        report["failure"].as_str().unwrap().contains("refused"),
        "{report}"
    );
    assert_eq!(report["resumed_from"], 5);
    assert_eq!(report["staged_until"], 5);
    assert_eq!(report["swapped"], Value::Null);
    assert_eq!(report["flush_requested"], false);
    assert_eq!(titles(&compartments(&data)), ["Old"]);
    assert_eq!(engine_state(&data)["flush_requested"], false);
    drop(broken);

    // With a working model the rebuild goes on from ordinal 5, keeping what was staged.
    let sim = Server::sim_historian(&machine.path("script.json"), "honest");
    use_historian_at(&machine, &sim);
    let run = machine
        .run(&["recomp", "--session", SESSION], &env(&data))
        .success();
    assert!(
        run.stdout.contains("resumed at message 5"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("swapped in:"), "{}", run.stdout);
    let rebuilt = compartments(&data);
    assert_eq!(rebuilt[0], old(0, 4, "Staged earlier"));
    assert_eq!(rebuilt.last().unwrap().end_ordinal, 20);
    let runs = store(&data)
        .read(|tx| tx.historian_runs(&sid(), 10))
        .unwrap();
    let staged: Vec<u64> = runs
        .iter()
        .filter(|run| run.outcome == "staged")
        .map(|run| run.chunk_start)
        .collect();
    assert_eq!(staged.last(), Some(&5), "the first staged run starts at 5");
    assert!(runs.iter().any(|run| run.outcome == "failed"));
}

#[test]
fn without_a_model_to_ask_the_error_names_the_settings_and_variables() {
    let (machine, data, _) = seeded();
    let run = machine.run(&["wrapup", "--session", SESSION], &env(&data));
    assert_eq!(run.code, Some(1));
    for needed in [
        "historian.endpoint",
        "historian.api_key_env",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
    ] {
        assert!(run.stderr.contains(needed), "{}", run.stderr);
    }
    let unknown = machine.run(&["recomp", "--session", "nope"], &env(&data));
    assert_eq!(unknown.code, Some(1));
    assert!(
        unknown.stderr.contains("no session `nope`"),
        "{}",
        unknown.stderr
    );
}
