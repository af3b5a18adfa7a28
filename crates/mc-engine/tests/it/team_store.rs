//! Two engines (two proxies' worth: each its own SQLite store) sharing one team store on a
//! real PostgreSQL: a memory the agent writes through one is in the other's `m[1]` on its
//! next natural bust after a sync round, and its `ctx_search` finds it; many writes from
//! both at once leave no duplicate and lose nothing. Needs `MC_TEST_PG_URL`; without it the
//! test says it skipped.

use mc_core::ProjectId;
use mc_core::pass_plan::PassKind;
use mc_engine::tools::{ToolContext, call_tool};
use mc_store::{MemoryStatus, ProjectKnowledge, TeamCache};
use mc_team_store::{TeamStore, TeamStoreUrl, TeamSync, create_scratch_database, round};
use serde_json::json;

use crate::support::{Call, Harness, MODEL, START_MS, conversation};

/// Two harnesses on one fresh team database, each bound to `project`, or `None` when no
/// server is configured.
fn two_proxies(
    runtime: &tokio::runtime::Runtime,
    project: &ProjectId,
) -> Option<[(Harness, TeamSync); 2]> {
    let Ok(server) = std::env::var("MC_TEST_PG_URL") else {
        eprintln!(
            "skipped: MC_TEST_PG_URL is not set (eval \"$(.ci/postgres-scratch start)\" sets it)"
        );
        return None;
    };
    let url = runtime
        .block_on(create_scratch_database(&server))
        .unwrap_or_else(|error| panic!("MC_TEST_PG_URL is set but unusable: {error}"));
    let open = || {
        let team = TeamStore::new(TeamStoreUrl::parse(&url).unwrap()).unwrap();
        runtime.block_on(team.migrate()).unwrap();
        let (harness, sync) = Harness::new().with_team_store(team, runtime.handle());
        harness.bind_project(project);
        (harness, sync)
    };
    Some([open(), open()])
}

fn memory_tool(harness: &Harness, project: &ProjectId, arguments: serde_json::Value) -> String {
    memory_tool_of(&harness.engine, &harness.session, project, arguments)
}

fn memory_tool_of(
    engine: &mc_engine::Engine,
    session: &mc_core::SessionId,
    project: &ProjectId,
    arguments: serde_json::Value,
) -> String {
    let ctx = ToolContext {
        engine,
        project: Some(project.clone()),
        session: Some(session.clone()),
        semantic: None,
        now_ms: START_MS as i64,
    };
    let answer = call_tool(&ctx, "ctx_memory", arguments);
    assert!(!answer.is_error, "{}", answer.text);
    answer.text
}

#[test]
fn a_memory_written_through_one_proxy_reaches_the_others_m1_and_search() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let project = ProjectId::new("git:team").unwrap();
    let Some([(alice, _), (bob, bob_sync)]) = two_proxies(&runtime, &project) else {
        return;
    };
    let messages = conversation(12);
    let call = |end: usize, at: u64, flush: bool| Call {
        model: MODEL,
        messages: &messages[..end],
        now_ms: START_MS + at,
        usable_window: 1_000_000,
        last_usage_tokens: None,
        operator_flush: flush,
    };
    let first = bob.pass(&call(3, 0, false)).unwrap();

    let saved = memory_tool(
        &alice,
        &project,
        json!({"action": "write", "category": "CONSTRAINTS", "content": "Deploys freeze on Fridays."}),
    );
    assert!(saved.starts_with("saved as memory "), "{saved}");

    // Bob's background loop runs a round; a cache hit still sends the same bytes.
    runtime.block_on(round(&bob_sync, &|| START_MS as i64 + 1_000));
    let hit = bob.pass(&call(5, 10_000, false)).unwrap();
    assert_eq!(hit.messages[..first.messages.len()], first.messages[..]);

    // Bob's next natural bust shows Alice's memory in m[1], m[0] untouched.
    let soft = bob.pass(&call(7, 20_000, true)).unwrap();
    assert_eq!(soft.plan.kind, PassKind::SoftBust, "{:?}", soft.plan);
    assert_eq!(soft.messages[0], first.messages[0]);
    let m1 = mc_core::joined_texts(&soft.messages[1].parts);
    assert!(m1.contains("Deploys freeze on Fridays."), "{m1}");

    let ctx = ToolContext {
        engine: &bob.engine,
        project: Some(project.clone()),
        session: Some(bob.session.clone()),
        semantic: None,
        now_ms: START_MS as i64 + 30_000,
    };
    let found = call_tool(
        &ctx,
        "ctx_search",
        json!({"query": "deploys friday freeze"}),
    );
    assert!(
        found.text.contains("Deploys freeze on Fridays."),
        "{}",
        found.text
    );
    // The search counts as use of the team's memory, kept beside Bob's cache under its team
    // id, for archive_stale_memories; his local table has no such memory.
    let used = bob
        .engine
        .store()
        .read(|tx| tx.team_memories_with_use(&project, &[mc_store::MemoryStatus::Active]))
        .unwrap();
    assert_eq!(used.len(), 1);
    assert_eq!(used[0].used.retrievals, 1);
    assert_eq!(
        used[0].used.last_retrieved_ms,
        Some(START_MS as i64 + 30_000)
    );
}

#[test]
fn concurrent_tool_writes_from_both_proxies_land_once_each() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let project = ProjectId::new("git:team").unwrap();
    let Some([(alice, alice_sync), (bob, bob_sync)]) = two_proxies(&runtime, &project) else {
        return;
    };
    const EACH: usize = 40;
    std::thread::scope(|scope| {
        for (name, harness) in [("alice", &alice), ("bob", &bob)] {
            let (engine, session, project) = (&harness.engine, &harness.session, &project);
            scope.spawn(move || {
                for n in 0..EACH {
                    // Half the facts are stated by both proxies: they must merge, not repeat.
                    let content = if n % 2 == 0 {
                        format!("Shared fact {n}.")
                    } else {
                        format!("Fact {n} from {name}.")
                    };
                    memory_tool_of(
                        engine,
                        session,
                        project,
                        json!({"action": "write", "category": "NAMING", "content": content}),
                    );
                }
            });
        }
    });
    // A write that met a busy pool was queued, as the tool said; each proxy's background
    // round replays its queue.
    for sync in [&alice_sync, &bob_sync] {
        runtime.block_on(round(sync, &|| START_MS as i64 + 60_000));
    }
    assert_eq!(
        alice.engine.store().read(|tx| tx.team_queue()).unwrap().0,
        0
    );
    assert_eq!(bob.engine.store().read(|tx| tx.team_queue()).unwrap().0, 0);
    let on_server = runtime
        .block_on(
            alice_sync
                .team()
                .memories(&project, &[MemoryStatus::Active]),
        )
        .unwrap();
    assert_eq!(on_server.len(), EACH / 2 + EACH, "{on_server:#?}");
    let shared_counts: Vec<u64> = on_server
        .iter()
        .filter(|memory| memory.record.content.starts_with("Shared"))
        .map(|memory| memory.record.seen_count)
        .collect();
    assert_eq!(shared_counts, vec![2; EACH / 2]);
    runtime.block_on(round(&alice_sync, &|| START_MS as i64));
    let cached = alice
        .engine
        .store()
        .read(|tx| TeamCache::new(tx).memories(&project, &[MemoryStatus::Active]))
        .unwrap();
    assert_eq!(cached, on_server);
}

#[test]
fn a_smart_note_written_through_one_proxy_is_read_and_found_through_the_other() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let project = ProjectId::new("git:team").unwrap();
    let Some([(alice, alice_sync), (bob, bob_sync)]) = two_proxies(&runtime, &project) else {
        return;
    };
    let tool = |harness: &Harness, name: &str, arguments: serde_json::Value| {
        let ctx = ToolContext {
            engine: &harness.engine,
            project: Some(project.clone()),
            session: Some(harness.session.clone()),
            semantic: None,
            now_ms: START_MS as i64,
        };
        let answer = call_tool(&ctx, name, arguments);
        assert!(!answer.is_error, "{}", answer.text);
        answer.text
    };
    let saved = tool(
        &alice,
        "ctx_note",
        json!({"action": "write", "content": "Rotate the staging certificates.",
               "surface_condition": "when the staging cluster is rebuilt"}),
    );
    assert!(saved.contains("for this project and its team"), "{saved}");
    let session_note = tool(
        &alice,
        "ctx_note",
        json!({"action": "write", "content": "Alice's own reminder."}),
    );
    assert!(session_note.starts_with("saved note "), "{session_note}");

    // Each proxy's background loop runs a round: Alice's sends, Bob's pulls.
    runtime.block_on(round(&alice_sync, &|| START_MS as i64 + 1_000));
    runtime.block_on(round(&bob_sync, &|| START_MS as i64 + 2_000));
    let read = tool(&bob, "ctx_note", json!({"action": "read"}));
    assert!(
        read.contains(
            "smart, pending evaluation (when: when the staging cluster is rebuilt): \
             Rotate the staging certificates."
        ),
        "{read}"
    );
    assert!(!read.contains("Alice's own reminder."), "{read}");
    let found = tool(&bob, "ctx_search", json!({"query": "staging certificates"}));
    assert!(
        found.contains("Rotate the staging certificates."),
        "{found}"
    );
}
