//! `serve`'s own scheduler, end to end: a session on a project goes through the proxy (so
//! the proxy learns the project's folder and the session's upstream), `verify_memories` is
//! due every minute, and within the scheduler's next wake the run is made with the
//! session's credentials against the simulator, archives the memory planted stale before
//! the session, and is listed by `dream --list` and `status`.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use mc_core::head::MemoryCategory;
use mc_store::{MemorySource, MemoryStatus, NewMemory, Store};
use serde_json::{Value, json};

use crate::support::Machine;
use crate::support::servers::Server;
use crate::support::stream_client::exchange;

const STALE: &str = "Request parsing lives in src/old_parser.rs";

/// The scheduler wakes once a minute; a due run is made within two wakes.
const RUN_DEADLINE: Duration = Duration::from_secs(150);

fn env(data: &Path) -> [(&'static str, &OsStr); 1] {
    [("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())]
}

#[test]
fn serve_runs_a_due_task_on_a_project_that_had_a_session_and_records_it() {
    let machine = Machine::fresh();
    let shop = machine.path("shop");
    std::fs::create_dir_all(shop.join("src")).unwrap();
    std::fs::write(shop.join("src/net.rs"), "pub const MAX_RETRIES: u32 = 7;\n").unwrap();
    let shop = std::fs::canonicalize(&shop).unwrap();
    let project = mc_proxy::identify_project(&shop).unwrap();
    let data = machine.path("data");
    let store = Store::open(data.join("context.db")).unwrap();
    store
        .write(|tx| {
            let memory = NewMemory {
                category: MemoryCategory::Architecture,
                content: STALE,
                source: MemorySource::Historian,
                permanent: false,
            };
            tx.add_memory(&project, &memory, 1_796_000_000_000)
        })
        .unwrap();
    drop(store);
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
    std::fs::write(
        machine.path("script.json"),
        r#"{"turns": [], "final_text": "ok"}"#,
    )
    .unwrap();
    let sim = Server::sim_dreamer(&machine.path("script.json"), "honest");
    let proxy = Server::serve(&machine, &sim.base_url, &data, 200_000);

    let body = serde_json::to_vec(&json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 256,
        "stream": true,
        "system": format!("You are a coding agent.\nPrimary working directory: {}\n", shop.display()),
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
    }))
    .unwrap();
    let (head, _) = exchange(
        &proxy.base_url,
        "dreamer-e2e",
        "turn-1",
        &body,
        &AtomicUsize::new(0),
    )
    .unwrap();
    assert!(
        head.starts_with("HTTP/1.1 200"),
        "{head}\n{}",
        proxy.stderr()
    );

    let started = Instant::now();
    let run = loop {
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
            break run;
        }
        assert!(
            started.elapsed() < RUN_DEADLINE,
            "no run within {RUN_DEADLINE:?}\n{}",
            proxy.stderr()
        );
        std::thread::sleep(Duration::from_secs(2));
    };
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
    assert_eq!(statuses, [(STALE.to_owned(), MemoryStatus::Archived)]);
}
