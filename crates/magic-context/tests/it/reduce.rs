//! `reduce` queues an operator's drops in the store the proxy uses: a session seeded through
//! the engine library, then the binary run against the same data directory.

use std::ffi::OsStr;
use std::path::Path;

use mc_core::breakpoints::CacheTtlChoice;
use mc_core::config::Config;
use mc_core::tags::TagNo;
use mc_core::{Host, Message, Part, Role, SessionId};
use mc_engine::{Engine, PassRequest};
use mc_store::Store;
use serde_json::json;

use crate::support::Machine;

const SESSION: &str = "sess-reduce";

/// A session of 29 tags: the task (§1§), then 14 turns of text (§2§, §4§, …) and a tool
/// result (§3§, §5§, …). The newest 20 (§10§–§29§) are protected.
fn seed(data_dir: &Path) {
    let mut messages = vec![Message::new(Role::User, vec![Part::text("fix the build")])];
    for turn in 0..14 {
        let id = format!("toolu_{turn}");
        messages.push(Message::new(
            Role::Assistant,
            vec![
                Part::text(format!("step {turn}")),
                Part::ToolCall {
                    id: id.clone(),
                    name: "Bash".into(),
                    input: json!({"command": "cargo build"}),
                },
            ],
        ));
        messages.push(Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: id,
                content: vec![Part::text(format!("build output {turn}"))],
                is_error: false,
            }],
        ));
    }
    let store = Store::open(data_dir.join("context.db")).unwrap();
    let engine = Engine::new(store, Config::default());
    let count = |text: &str| text.len() as u64 / 4;
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
            messages: &messages,
            chain: None,
            now_ms: 1_795_952_640_000,
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
        .unwrap();
}

/// The queued drops of the seeded session, as (tag, source, landed).
fn drops(data_dir: &Path) -> Vec<(TagNo, String, bool)> {
    let store = Store::open(data_dir.join("context.db")).unwrap();
    let session = SessionId::new(SESSION).unwrap();
    store
        .read(|tx| tx.drops(&session))
        .unwrap()
        .into_iter()
        .map(|row| (row.tag, row.source, row.landed_pass.is_some()))
        .collect()
}

fn seeded() -> (Machine, std::path::PathBuf) {
    let machine = Machine::fresh();
    let data = machine.path("data");
    seed(&data);
    (machine, data)
}

fn env(data: &Path) -> [(&'static str, &OsStr); 1] {
    [("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())]
}

#[test]
fn queues_drops_and_reports_what_waits_and_what_was_refused() {
    let (machine, data) = seeded();
    let run = machine
        .run(
            &["reduce", "--session", SESSION, "3-5,§29§,200", "--json"],
            &env(&data),
        )
        .success();
    assert_eq!(
        run.json(),
        json!({
            "session": SESSION,
            "spec": "3-5,§29§,200",
            "queued": [3, 4, 5],
            "waiting": [29],
            "refused": [{"tag": 200, "reason": "unknown_tag", "message": "no such tag"}],
        })
    );
    let operator = |tag| (TagNo(tag), "operator".to_owned(), false);
    assert_eq!(
        drops(&data),
        [operator(3), operator(4), operator(5), operator(29)]
    );

    // Asking again: nothing new is queued, and the text report says why.
    let again = machine
        .run(&["reduce", "--session", SESSION, "3,7"], &env(&data))
        .success();
    assert_eq!(
        again.stdout,
        "queued   §7§: they land on the next pass allowed to change the cached prefix\n\
         refused  §3§: already queued\n"
    );
    assert_eq!(drops(&data).len(), 5);
}

#[test]
fn an_unknown_session_fails_with_a_clear_message() {
    let (machine, data) = seeded();
    let run = machine.run(&["reduce", "--session", "nobody", "3"], &env(&data));
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(
        run.stderr.contains("no session `nobody` in the store"),
        "{}",
        run.stderr
    );
    assert!(drops(&data).is_empty());
}

#[test]
fn a_bad_spec_fails_and_queues_nothing() {
    let (machine, data) = seeded();
    for (spec, says) in [
        ("5-3", "runs backwards"),
        ("3,x", "is not a tag number"),
        (" , ", "drop list is empty"),
    ] {
        let run = machine.run(&["reduce", "--session", SESSION, spec], &env(&data));
        assert_eq!(run.code, Some(1), "{spec}: {}", run.stdout);
        assert!(run.stderr.contains(says), "{spec}: {}", run.stderr);
    }
    assert!(drops(&data).is_empty());
}

#[test]
fn flush_marks_the_session_and_says_what_will_land() {
    let (machine, data) = seeded();
    machine
        .run(&["reduce", "--session", SESSION, "3,§29§"], &env(&data))
        .success();
    let run = machine
        .run(&["flush", "--session", SESSION, "--json"], &env(&data))
        .success();
    // §29§ is protected and keeps waiting; §3§ lands on the next pass.
    assert_eq!(
        run.json(),
        json!({"session": SESSION, "flush_requested": true, "drops_landing": 1})
    );
    let text = machine
        .run(&["flush", "--session", SESSION], &env(&data))
        .success();
    assert_eq!(
        text.stdout,
        format!(
            "session {SESSION}: its next request busts the cache and lands 1 queued drop; \
             nothing changes before it\n"
        )
    );
    let unknown = machine.run(&["flush", "--session", "nobody"], &env(&data));
    assert_eq!(unknown.code, Some(1));
    assert!(
        unknown.stderr.contains("no session `nobody` in the store"),
        "{}",
        unknown.stderr
    );
}

/// Without `--session`, an operator command acts on the most recently seen session of the
/// project it runs in, and says which on stderr; in a folder of no known project it asks
/// for `--session`.
#[test]
fn without_a_session_the_current_projects_latest_is_taken() {
    let (machine, data) = seeded();
    let here = mc_proxy::identify_project(&machine.path("work")).unwrap();
    let store = Store::open(data.join("context.db")).unwrap();
    store
        .write(|tx| {
            for (id, seen_ms) in [(SESSION, 2_000), ("sess-older", 1_000)] {
                tx.upsert_session(
                    &mc_store::NewSession {
                        id: SessionId::new(id).unwrap(),
                        host: Host::ClaudeCode,
                        project: Some(here.clone()),
                    },
                    seen_ms,
                )?;
            }
            Ok(())
        })
        .unwrap();
    drop(store);
    let run = machine
        .run(&["reduce", "3", "--json"], &env(&data))
        .success();
    assert_eq!(run.json()["session"], SESSION, "{}", run.stdout);
    assert!(
        run.stderr.contains(&format!("acting on session {SESSION}")),
        "{}",
        run.stderr
    );
    let flushed = machine.run(&["flush", "--json"], &env(&data)).success();
    assert_eq!(flushed.json()["session"], SESSION);
    std::fs::create_dir_all(machine.path("elsewhere")).unwrap();
    let lost = machine.run_in(&machine.path("elsewhere"), &["flush"], &env(&data));
    assert_ne!(lost.code, Some(0));
    assert!(lost.stderr.contains("pass --session ID"), "{}", lost.stderr);
}
