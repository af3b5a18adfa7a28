//! Two `serve` processes of one team, over HTTP against the simulator, each with its own
//! store and both on one team store in PostgreSQL: a memory the model writes through one
//! (the proxy's own `ctx_memory`, a hidden round) is in the other's `m[1]` on its next
//! natural rebuild and found by its `ctx_search`; `kill -9` of a proxy in the middle of its
//! writes loses and duplicates nothing once it runs again; and PostgreSQL stopped mid-session
//! leaves requests flowing while the writes queue, which land once it is back. Needs
//! `MC_TEST_PG_URL` (and `MC_TEST_PG_BIN` for the server that is stopped).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use mc_core::ProjectId;
use mc_store::{MemoryStatus, ProjectKnowledge, Store, TeamCache};
use mc_team_store::{TeamStore, TeamStoreUrl, create_scratch_database};
use serde_json::{Value, json};

use crate::support::Machine;
use crate::support::recording_relay::Relay;
use crate::support::servers::Server;
use crate::support::stream_client::exchange;

#[path = "../../../mc-team-store/tests/it/cluster.rs"]
pub(crate) mod cluster;

/// The memory Alice's agent writes and Bob's finds.
const FACT: &str = "Release branches are cut on Tuesdays.";
/// How long the background sync (every second) may take to carry a change.
const SYNC_DEADLINE: Duration = Duration::from_secs(20);
pub(crate) const WINDOW_TOKENS: u64 = 200_000;

/// A machine whose user file points at `url`, with a project folder; the folder and its id.
pub(crate) fn team_machine(url: &str) -> (Machine, PathBuf, ProjectId) {
    let machine = Machine::fresh();
    let user = machine.user_file();
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, json!({"team_store": {"url": url}}).to_string()).unwrap();
    let shop = machine.path("shop");
    std::fs::create_dir_all(&shop).unwrap();
    let shop = std::fs::canonicalize(&shop).unwrap();
    let project = mc_proxy::identify_project(&shop).unwrap();
    (machine, shop, project)
}

/// A fresh team database on the server `MC_TEST_PG_URL` names, or `None` (said) without it.
pub(crate) fn scratch_url() -> Option<String> {
    let Ok(server) = std::env::var("MC_TEST_PG_URL") else {
        eprintln!(
            "skipped: MC_TEST_PG_URL is not set (eval \"$(.ci/postgres-scratch start)\" sets it)"
        );
        return None;
    };
    Some(
        runtime()
            .block_on(create_scratch_database(&server))
            .unwrap(),
    )
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A script writing `count` numbered facts, one per round, while the user asks to write.
fn writing_script(machine: &Machine, count: usize) -> PathBuf {
    let turns: Vec<Value> = (0..count)
        .map(|n| {
            json!({"when": {"last_user_text_contains": "WRITE"},
                "content": [{"type": "tool_use", "name": "ctx_memory", "input":
                    {"action": "write", "category": "NAMING", "content": format!("Team fact {n}.")}}]})
        })
        .collect();
    let path = machine.path("writes.json");
    std::fs::write(
        &path,
        json!({"turns": turns, "final_text": "ok"}).to_string(),
    )
    .unwrap();
    path
}

/// One streamed Anthropic call in `shop` with `messages`; the response's text.
pub(crate) fn send(
    proxy: &Server,
    shop: &Path,
    session: &str,
    key: &str,
    messages: Value,
) -> String {
    let body = serde_json::to_vec(&json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 256,
        "stream": true,
        "system": format!("You are a coding agent.\nPrimary working directory: {}\n", shop.display()),
        "messages": messages,
    }))
    .unwrap();
    let (head, text) = exchange(&proxy.base_url, session, key, &body, &AtomicUsize::new(0))
        .unwrap_or_else(|| panic!("no answer\n{}", proxy.stderr()));
    assert!(
        head.starts_with("HTTP/1.1 200"),
        "{head}\n{}",
        proxy.stderr()
    );
    text
}

pub(crate) fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}]})
}

/// The live memories of the project in the team store, by content, with their counts.
pub(crate) fn on_server(url: &str, project: &ProjectId) -> BTreeMap<String, u64> {
    let runtime = runtime();
    let team = TeamStore::new(TeamStoreUrl::parse(url).unwrap()).unwrap();
    // Asked before a proxy has brought the schema up, the tables would not be there yet.
    runtime.block_on(team.migrate()).unwrap();
    let memories = runtime
        .block_on(team.memories(project, &[MemoryStatus::Active]))
        .unwrap();
    let mut counted = BTreeMap::new();
    for memory in memories {
        *counted.entry(memory.record.content).or_default() += memory.record.seen_count;
    }
    counted
}

/// Waits until `done` holds, or fails saying `what`.
pub(crate) fn wait_for(what: &str, proxy: &Server, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < SYNC_DEADLINE,
            "{what}: not within {SYNC_DEADLINE:?}\n{}",
            proxy.stderr()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub(crate) fn queued(data: &Path) -> u64 {
    let store = Store::open(data.join("context.db")).unwrap();
    store.read(|tx| tx.team_queue()).unwrap().0
}

#[test]
fn a_memory_written_through_one_serve_reaches_the_others_m1_and_its_search() {
    let Some(url) = scratch_url() else {
        return;
    };
    let (machine, shop, project) = team_machine(&url);
    let alice_script = machine.path("alice.json");
    std::fs::write(
        &alice_script,
        json!({"final_text": "ok", "turns": [
            {"when": {"last_user_text_contains": "REMEMBER"}, "content": [{"type": "tool_use",
              "name": "ctx_memory", "input": {"action": "write", "category": "PROJECT_RULES", "content": FACT}}]},
            {"when": {"last_tool_result_contains": "saved as memory"},
             "content": [{"type": "text", "text": "NOTED"}]}]})
        .to_string(),
    )
    .unwrap();
    let bob_script = machine.path("bob.json");
    std::fs::write(
        &bob_script,
        json!({"final_text": "ok", "turns": [
            {"when": {"last_user_text_contains": "SEARCH"}, "content": [{"type": "tool_use",
              "name": "ctx_search", "input": {"query": "release branches tuesday"}}]},
            {"when": {"last_tool_result_contains": FACT},
             "content": [{"type": "text", "text": "FOUND-IT"}]}]})
        .to_string(),
    )
    .unwrap();
    let alice_sim = Server::sim(&alice_script, WINDOW_TOKENS, 1.0);
    let bob_sim = Server::sim(&bob_script, WINDOW_TOKENS, 1.0);
    let bob_upstream = Relay::start(&bob_sim.base_url);
    let alice_data = machine.path("alice");
    let bob_data = machine.path("bob");
    let alice = Server::serve(&machine, &alice_sim.base_url, &alice_data, WINDOW_TOKENS);
    let bob = Server::serve(&machine, &bob_upstream.base_url, &bob_data, WINDOW_TOKENS);

    let first = send(&bob, &shop, "bob", "b-1", json!([user("Hello")]));
    assert!(first.contains("ok"), "{first}");
    let noted = send(
        &alice,
        &shop,
        "alice",
        "a-1",
        json!([user("REMEMBER the release day")]),
    );
    assert!(noted.contains("NOTED"), "{noted}\n{}", alice.stderr());
    assert_eq!(on_server(&url, &project).get(FACT), Some(&1));

    wait_for("Bob's cache has Alice's memory", &bob, || {
        let store = Store::open(bob_data.join("context.db")).unwrap();
        store
            .read(|tx| TeamCache::new(tx).memories(&project, &[MemoryStatus::Active]))
            .unwrap()
            .iter()
            .any(|memory| memory.record.content == FACT)
    });
    // Bob's next natural rebuild: the operator flushes his session.
    let env: [(&str, &OsStr); 1] = [("MAGIC_CONTEXT_DATA_DIR", bob_data.as_os_str())];
    machine.run(&["flush", "--session", "bob"], &env).success();
    let found = send(
        &bob,
        &shop,
        "bob",
        "b-2",
        json!([user("Hello"), {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
               user("SEARCH for the release day")]),
    );
    assert!(found.contains("FOUND-IT"), "{found}\n{}", bob.stderr());
    let sent: Value = serde_json::from_slice(&bob_upstream.log.bodies("b-2")[0]).unwrap();
    let head = |index: usize| sent["messages"][index].to_string();
    assert!(head(1).contains(FACT), "m[1]: {}", head(1));
    assert!(!head(0).contains(FACT), "m[0] stays as it was: {}", head(0));
}

#[test]
fn a_serve_killed_mid_write_loses_and_duplicates_nothing_after_restart() {
    let Some(url) = scratch_url() else {
        return;
    };
    let (machine, shop, project) = team_machine(&url);
    const FACTS: usize = 48;
    let sim = Server::sim(&writing_script(&machine, FACTS), WINDOW_TOKENS, 1.0);
    let data = machine.path("data");
    let proxy = Server::serve(&machine, &sim.base_url, &data, WINDOW_TOKENS);
    let base_url = proxy.base_url.clone();
    let shop_for_writer = shop.clone();
    // Requests keep writing (eight rounds, eight facts each) until the proxy dies.
    let writer = std::thread::spawn(move || {
        for n in 0..FACTS {
            let body = serde_json::to_vec(&json!({
                "model": "claude-sonnet-4-5", "max_tokens": 256, "stream": true,
                "system": format!("Primary working directory: {}\n", shop_for_writer.display()),
                "messages": [user(&format!("WRITE batch {n}"))],
            }))
            .unwrap();
            let session = format!("w-{n}");
            if exchange(&base_url, &session, &session, &body, &AtomicUsize::new(0)).is_none() {
                return;
            }
        }
    });
    wait_for("some writes landed", &proxy, || {
        on_server(&url, &project).len() >= 5
    });
    let pid = proxy.pid();
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    drop(proxy);
    let _ = writer.join();

    // What the dead proxy had accepted: landed, or waiting in its queue.
    let landed = on_server(&url, &project);
    let store = Store::open(data.join("context.db")).unwrap();
    let waiting: Vec<String> = store
        .read(|tx| tx.queued_team_writes(1_000))
        .unwrap()
        .into_iter()
        .filter_map(|queued| match queued.write {
            mc_store::TeamWrite::Add { content, .. } => Some(content),
            _ => None,
        })
        .collect();
    drop(store);
    let restarted = Server::serve(&machine, &sim.base_url, &data, WINDOW_TOKENS);
    wait_for("the queue drained", &restarted, || queued(&data) == 0);
    let after = on_server(&url, &project);
    for (content, count) in &after {
        assert_eq!(*count, 1, "{content} was counted {count} times: {after:?}");
    }
    for content in landed.keys().chain(&waiting) {
        assert!(after.contains_key(content), "{content} was lost: {after:?}");
    }
    assert!(after.len() >= 5);
}

#[test]
fn requests_keep_flowing_while_postgres_is_down_and_the_queue_lands_after() {
    let Some(cluster) = cluster::Cluster::start() else {
        return;
    };
    let url = runtime()
        .block_on(create_scratch_database(&cluster.url()))
        .unwrap();
    let (machine, shop, project) = team_machine(&url);
    let sim = Server::sim(&writing_script(&machine, 16), WINDOW_TOKENS, 1.0);
    let data = machine.path("data");
    let proxy = Server::serve(&machine, &sim.base_url, &data, WINDOW_TOKENS);

    let timed = |session: &str| {
        let started = Instant::now();
        send(&proxy, &shop, session, session, json!([user("WRITE now")]));
        started.elapsed()
    };
    let online = timed("up-1");
    let landed = on_server(&url, &project);
    assert_eq!(landed.len(), 8, "{landed:?}");

    cluster.down();
    let offline = timed("down-1");
    assert!(
        offline < online + Duration::from_secs(3),
        "a request with the server down took {offline:?} (up: {online:?})"
    );
    assert_eq!(queued(&data), 8, "{}", proxy.stderr());

    cluster.up();
    wait_for("the queue drained", &proxy, || queued(&data) == 0);
    let after = on_server(&url, &project);
    assert_eq!(after.len(), 16, "{after:?}");
    assert!(after.values().all(|count| *count == 1), "{after:?}");
}
