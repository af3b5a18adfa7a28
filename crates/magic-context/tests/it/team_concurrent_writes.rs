//! 1,000 concurrent `ctx_memory` writes from two `serve` processes on one team store: each
//! of 500 facts is written once through each proxy, by several requests at a time on both,
//! and the team ends with exactly 500 memories, each counted twice: no write lost (a count
//! short), none applied twice (a count over), no memory stored twice. Needs `MC_TEST_PG_URL`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use mc_store::{MemoryAction, MemoryStatus};
use mc_team_store::{TeamStore, TeamStoreUrl};
use serde_json::{Value, json};

use crate::support::Machine;
use crate::support::servers::Server;
use crate::support::stream_client::exchange;
use crate::team_serves::{WINDOW_TOKENS, queued, scratch_url, team_machine, user, wait_for};

/// Facts written; each proxy writes every one of them.
const FACTS: usize = 500;
/// `ctx_memory` calls in one model turn.
const CALLS_PER_TURN: usize = 10;
/// Requests in flight at once on each proxy.
const CLIENTS: usize = 5;
/// Requests each client sends: more than the script needs (a request plays up to eight
/// turns), so the script runs out while they still send.
const REQUESTS_PER_CLIENT: usize = 6;

fn fact(n: usize) -> String {
    format!("Concurrent team fact number {n}.")
}

/// A script writing the facts in `order`, `CALLS_PER_TURN` calls a turn, whenever the user
/// asks to write (a request keeps playing turns while its calls are the proxy's own).
fn script(machine: &Machine, name: &str, order: &[usize]) -> PathBuf {
    let turns: Vec<Value> = order
        .chunks(CALLS_PER_TURN)
        .map(|facts| {
            let calls: Vec<Value> = facts
                .iter()
                .map(|&n| {
                    json!({"type": "tool_use", "name": "ctx_memory", "input":
                        {"action": "write", "category": "NAMING", "content": fact(n)}})
                })
                .collect();
            json!({"when": {"last_user_text_contains": "WRITE"}, "content": calls})
        })
        .collect();
    let path = machine.path(name);
    std::fs::write(
        &path,
        json!({"turns": turns, "final_text": "ok"}).to_string(),
    )
    .unwrap();
    path
}

/// `CLIENTS` threads sending `REQUESTS_PER_CLIENT` writing requests each to `proxy`.
fn clients(proxy: &Server, shop: &Path, name: &'static str) -> Vec<std::thread::JoinHandle<()>> {
    (0..CLIENTS)
        .map(|client| {
            let base_url = proxy.base_url.clone();
            let shop = shop.to_owned();
            std::thread::spawn(move || {
                for n in 0..REQUESTS_PER_CLIENT {
                    let body = serde_json::to_vec(&json!({
                        "model": "claude-sonnet-4-5", "max_tokens": 256, "stream": true,
                        "system": format!("Primary working directory: {}\n", shop.display()),
                        "messages": [user(&format!("WRITE batch {client}-{n}"))],
                    }))
                    .unwrap();
                    let session = format!("{name}-{client}-{n}");
                    let answered =
                        exchange(&base_url, &session, &session, &body, &AtomicUsize::new(0));
                    let (head, _) = answered.unwrap_or_else(|| panic!("{session}: no answer"));
                    assert!(head.starts_with("HTTP/1.1 200"), "{session}: {head}");
                }
            })
        })
        .collect()
}

#[test]
fn a_thousand_concurrent_writes_from_two_serves_lose_and_duplicate_nothing() {
    let Some(url) = scratch_url() else {
        return;
    };
    let (machine, shop, project) = team_machine(&url);
    let forwards: Vec<usize> = (0..FACTS).collect();
    let backwards: Vec<usize> = (0..FACTS).rev().collect();
    // Alice writes the facts first to last, Bob last to first: they meet in the middle,
    // where both write the same fact at about the same time.
    let alice_sim = Server::sim(
        &script(&machine, "alice.json", &forwards),
        WINDOW_TOKENS,
        1.0,
    );
    let bob_sim = Server::sim(
        &script(&machine, "bob.json", &backwards),
        WINDOW_TOKENS,
        1.0,
    );
    let (alice_data, bob_data) = (machine.path("alice"), machine.path("bob"));
    let alice = Server::serve(&machine, &alice_sim.base_url, &alice_data, WINDOW_TOKENS);
    let bob = Server::serve(&machine, &bob_sim.base_url, &bob_data, WINDOW_TOKENS);

    let started = Instant::now();
    let mut writers = clients(&alice, &shop, "alice");
    writers.extend(clients(&bob, &shop, "bob"));
    for writer in writers {
        writer.join().unwrap_or_else(|_| {
            panic!(
                "a client failed\nalice: {}\nbob: {}",
                alice.stderr(),
                bob.stderr()
            )
        });
    }
    wait_for("Alice's queue drained", &alice, || queued(&alice_data) == 0);
    wait_for("Bob's queue drained", &bob, || queued(&bob_data) == 0);
    let took = started.elapsed();

    // Row by row, not by text: two rows of one fact would be a duplicate.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let team = TeamStore::new(TeamStoreUrl::parse(&url).unwrap()).unwrap();
    let rows = runtime
        .block_on(team.memories(&project, MemoryStatus::ALL))
        .unwrap();
    let mut counts = BTreeMap::new();
    for row in &rows {
        let previous = counts.insert(row.record.content.clone(), row.record.seen_count);
        assert_eq!(previous, None, "{} is stored twice", row.record.content);
        assert_eq!(row.record.status, MemoryStatus::Active);
    }
    let off: Vec<(usize, Option<u64>)> = (0..FACTS)
        .map(|n| (n, counts.get(&fact(n)).copied()))
        .filter(|(_, count)| *count != Some(2))
        .collect();
    assert!(
        off.is_empty(),
        "facts not counted exactly twice (fact, count): {off:?}"
    );
    assert_eq!(rows.len(), FACTS, "one memory per fact, nothing else");
    let log = runtime
        .block_on(team.changes_since(&project, 0))
        .unwrap()
        .log;
    let added = log
        .iter()
        .filter(|entry| entry.action == MemoryAction::Added)
        .count();
    assert_eq!(
        (added, log.len()),
        (FACTS, FACTS),
        "one addition logged per fact"
    );
    eprintln!("1,000 writes through two proxies landed in {took:?}");
}
