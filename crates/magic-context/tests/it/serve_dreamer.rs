//! `serve`'s own scheduler, end to end: a session on a project goes through the proxy (so
//! the proxy learns the project's folder and the session's upstream), `verify_memories` is
//! due every minute, and within the scheduler's next wake the run is made with the
//! session's credentials against the simulator, archives the memory planted stale before
//! the session, and is listed by `dream --list` and `status`.
//!
//! The archive is a background write: it must not bust the session's cache. A relay between
//! the proxy and the simulator records what each client turn sent upstream: the turn after
//! the run carries the same `m[0]` bytes (stale memory and all) as the turn before it, and
//! only the next natural rebuild of `m[0]` (the client switches model, so nothing of the
//! prefix is cached anyway) drops the archived memory.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use mc_core::head::MemoryCategory;
use mc_core::{ProjectId, SessionId};
use mc_store::{MemorySource, MemoryStatus, NewMemory, Store};
use serde_json::{Value, json};

use crate::support::Machine;
use crate::support::recording_relay::Relay;
use crate::support::servers::Server;
use crate::support::stream_client::exchange;

const STALE: &str = "Request parsing lives in src/old_parser.rs";
const TRUE: &str = "Retries are capped by MAX_RETRIES in src/net.rs";
const SESSION: &str = "dreamer-e2e";

/// The scheduler wakes once a minute; a due run is made within two wakes.
const RUN_DEADLINE: Duration = Duration::from_secs(150);

fn env(data: &Path) -> [(&'static str, &OsStr); 1] {
    [("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())]
}

/// A project folder with one source file, its memories planted in the store before any
/// session: one naming a file that is gone, one the code still backs.
fn planted(machine: &Machine) -> (std::path::PathBuf, ProjectId) {
    let shop = machine.path("shop");
    std::fs::create_dir_all(shop.join("src")).unwrap();
    std::fs::write(shop.join("src/net.rs"), "pub const MAX_RETRIES: u32 = 7;\n").unwrap();
    let shop = std::fs::canonicalize(&shop).unwrap();
    let project = mc_proxy::identify_project(&shop).unwrap();
    let store = Store::open(machine.path("data").join("context.db")).unwrap();
    store
        .write(|tx| {
            for content in [STALE, TRUE] {
                let memory = NewMemory {
                    category: MemoryCategory::Architecture,
                    content,
                    source: MemorySource::Historian,
                    permanent: false,
                };
                tx.add_memory(&project, &memory, 1_796_000_000_000)?;
            }
            Ok(())
        })
        .unwrap();
    (shop, project)
}

/// The user config: only `verify_memories`, every minute.
fn verify_every_minute(machine: &Machine) {
    let file = machine.user_file();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let off = "off";
    let schedules = json!({
        "consolidate_memories": off, "verify_memories": "* * * * *",
        "archive_stale_memories": off, "rewrite_verbose_memories": off,
        "maintain_docs": off, "evaluate_smart_notes": off,
        "promote_user_profile": off, "pin_key_files": off,
    });
    std::fs::write(
        &file,
        json!({"dreamer": {"schedules": schedules}}).to_string(),
    )
    .unwrap();
}

/// Client turn `turns` of the session (one user message per turn, an assistant's "ok"
/// between them) on `model`, sent through the proxy under the relay key `turn-N`.
fn send_turn(proxy: &Server, shop: &Path, model: &str, turns: usize) {
    let mut messages = Vec::new();
    for turn in 1..=turns {
        if turn > 1 {
            messages.push(json!({"role": "assistant", "content": "ok"}));
        }
        let text = format!("Turn {turn}: keep going with the parser.");
        messages.push(json!({"role": "user", "content": [{"type": "text", "text": text}]}));
    }
    let body = serde_json::to_vec(&json!({
        "model": model,
        "max_tokens": 256,
        "stream": true,
        "system": format!("You are a coding agent.\nPrimary working directory: {}\n", shop.display()),
        "messages": messages,
    }))
    .unwrap();
    let key = format!("turn-{turns}");
    let (head, _) = exchange(&proxy.base_url, SESSION, &key, &body, &AtomicUsize::new(0)).unwrap();
    assert!(
        head.starts_with("HTTP/1.1 200"),
        "{head}\n{}",
        proxy.stderr()
    );
}

/// `dream --list`'s `verify_memories` run, once there is one.
fn wait_for_the_run(machine: &Machine, proxy: &Server) -> Value {
    let data = machine.path("data");
    let started = Instant::now();
    loop {
        let listed = machine
            .run(&["dream", "--list", "--json"], &env(&data))
            .success()
            .json();
        let verify = listed["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|run| run["task"] == "verify_memories")
            .cloned();
        if let Some(run) = verify {
            return run;
        }
        assert!(
            started.elapsed() < RUN_DEADLINE,
            "no run within {RUN_DEADLINE:?}\n{}",
            proxy.stderr()
        );
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// The pass kind of each of the session's calls, oldest first, once `count` are recorded.
fn pass_kinds(data: &Path, count: usize) -> Vec<String> {
    let store = Store::open(data.join("context.db")).unwrap();
    let session = SessionId::new(SESSION).unwrap();
    let started = Instant::now();
    loop {
        let calls = store.read(|tx| tx.calls(&session, 10)).unwrap();
        if calls.len() >= count || started.elapsed() > Duration::from_secs(10) {
            return calls
                .into_iter()
                .rev()
                .map(|call| call.pass_kind.unwrap_or_default())
                .collect();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn serve_archives_a_stale_memory_which_leaves_m0_at_the_next_natural_rebuild_only() {
    let machine = Machine::fresh();
    let data = machine.path("data");
    let (shop, project) = planted(&machine);
    verify_every_minute(&machine);
    std::fs::write(
        machine.path("script.json"),
        r#"{"turns": [], "final_text": "ok"}"#,
    )
    .unwrap();
    let sim = Server::sim_dreamer(&machine.path("script.json"), "honest");
    let relay = Relay::start(&sim.base_url);
    let proxy = Server::serve(&machine, &relay.base_url, &data, 200_000);
    let head_of = |turns: usize| -> Value {
        let bodies = relay.log.bodies(&format!("turn-{turns}"));
        let body: Value = serde_json::from_slice(bodies.last().unwrap()).unwrap();
        body["messages"][0].clone()
    };

    send_turn(&proxy, &shop, "claude-sonnet-4-5", 1);
    let before = head_of(1);
    assert!(
        before.to_string().contains(STALE) && before.to_string().contains(TRUE),
        "{before}"
    );

    let run = wait_for_the_run(&machine, &proxy);
    assert_eq!(run["outcome"], "done", "{run}\n{}", proxy.stderr());
    assert_eq!(run["project"], project.as_str());
    assert_eq!(run["changes"], 1, "{run}");
    assert_eq!(
        run["model"], "claude-haiku-4-5",
        "the session's small model"
    );
    let status = machine
        .run(&["status", "--json"], &env(&data))
        .success()
        .json();
    let shown: Vec<&Value> = status["dreamer_runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|shown| shown["id"] == run["id"])
        .collect();
    assert_eq!(shown.len(), 1, "{status}");
    let store = Store::open(data.join("context.db")).unwrap();
    let statuses: Vec<(String, MemoryStatus)> = store
        .read(|tx| tx.memories(&project, &[MemoryStatus::Active, MemoryStatus::Archived]))
        .unwrap()
        .into_iter()
        .map(|memory| (memory.record.content, memory.record.status))
        .collect();
    assert_eq!(
        statuses,
        [
            (STALE.to_owned(), MemoryStatus::Archived),
            (TRUE.to_owned(), MemoryStatus::Active)
        ]
    );

    // The archive busts nothing: the next turn's m[0] is the cached one, stale memory and all.
    send_turn(&proxy, &shop, "claude-sonnet-4-5", 2);
    assert_eq!(head_of(2), before, "the dreamer's write changed m[0]");

    // The client switches model: its cache is separate, so m[0] is rebuilt, without it.
    send_turn(&proxy, &shop, "claude-opus-4-5", 3);
    let after = head_of(3).to_string();
    assert!(!after.contains(STALE) && after.contains(TRUE), "{after}");
    assert_eq!(
        pass_kinds(&data, 3),
        ["hard_fold", "cache_hit", "hard_fold"],
        "{}",
        proxy.stderr()
    );
}
