//! The team's use of its memories: a batch counts once however often it is sent, ids that
//! are no memory of the project are left out, times only move forwards, and a proxy follows
//! use by the same version cursor as memories. Two local stores stand for two machines: a
//! search on one reaches the other's cache with the next sync.

use std::sync::Arc;

use mc_store::{MemoryStatus, Store, TeamUse};
use mc_team_store::{TeamSync, Written};

use crate::support::{NOW_MS, add, project, team_store};

fn used(id: u64, retrievals: u64, retrieved: Option<i64>, restated: Option<i64>) -> TeamUse {
    TeamUse {
        id,
        retrievals,
        last_retrieved_ms: retrieved,
        last_restated_ms: restated,
    }
}

#[tokio::test]
async fn a_batch_counts_once_and_use_follows_the_version_cursor() {
    let Some((team, _url)) = team_store().await else {
        return;
    };
    let (p, other) = (project("p"), project("other"));
    let mut ids = Vec::new();
    for (n, content) in ["First fact.", "Second fact."].into_iter().enumerate() {
        let applied = team
            .apply(&format!("add-{n}"), &p, &add(content), NOW_MS)
            .await
            .unwrap();
        ids.push(applied.memory_id());
    }
    let foreign = team
        .apply("add-other", &other, &add("Another project's fact."), NOW_MS)
        .await
        .unwrap()
        .memory_id();
    let head = team.changes_since(&p, 0).await.unwrap().head;

    let batch = [
        used(ids[0], 2, Some(NOW_MS + 10), None),
        used(ids[1], 0, None, Some(NOW_MS + 20)),
        used(foreign, 1, Some(NOW_MS + 10), None),
        used(9_999, 1, Some(NOW_MS + 10), None),
    ];
    assert_eq!(
        team.record_use("use-1", &p, &batch, NOW_MS).await.unwrap(),
        2
    );
    assert_eq!(
        team.record_use("use-1", &p, &batch, NOW_MS).await.unwrap(),
        0,
        "a batch sent again is not counted again"
    );
    let late = [used(ids[0], 1, Some(NOW_MS + 5), Some(NOW_MS + 1))];
    assert_eq!(
        team.record_use("use-2", &p, &late, NOW_MS).await.unwrap(),
        1
    );

    let changes = team.changes_since(&p, head).await.unwrap();
    assert!(changes.memories.is_empty() && changes.log.is_empty());
    let mut uses = changes.uses.clone();
    uses.sort_by_key(|used| used.id);
    assert_eq!(
        uses,
        [
            used(ids[0], 3, Some(NOW_MS + 10), Some(NOW_MS + 1)),
            used(ids[1], 0, None, Some(NOW_MS + 20)),
        ],
        "counts add up, a late time moves nothing back, other projects' ids are left out"
    );
    assert!(changes.head > head);
    assert!(
        team.changes_since(&p, changes.head)
            .await
            .unwrap()
            .uses
            .is_empty()
    );
    assert!(
        team.changes_since(&other, 0).await.unwrap().uses.is_empty(),
        "the other project's memory was not counted through this project"
    );

    // The same fact added again is a restatement.
    team.apply("add-again", &p, &add("first  FACT"), NOW_MS + 30)
        .await
        .unwrap();
    let again = team.changes_since(&p, changes.head).await.unwrap();
    assert_eq!(
        again.uses,
        [used(ids[0], 3, Some(NOW_MS + 10), Some(NOW_MS + 30))]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_on_one_machine_reaches_the_other_machines_cache_with_the_next_sync() {
    let Some((team, _url)) = team_store().await else {
        return;
    };
    let p = project("p");
    let machine = || {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path().join("context.db")).unwrap());
        (dir, TeamSync::new(Arc::clone(&store), team.clone()), store)
    };
    let (_a_dir, alice, alice_store) = machine();
    let (_b_dir, bob, bob_store) = machine();
    let Written::Landed(applied) = alice.write(&p, add("Shared fact."), NOW_MS).await.unwrap()
    else {
        panic!("the team store did not take the write");
    };
    let id = applied.memory_id();
    alice.pull(&p, NOW_MS).await.unwrap();
    bob.pull(&p, NOW_MS).await.unwrap();

    for at_ms in [NOW_MS + 100, NOW_MS + 200] {
        let counted = alice_store
            .write(|tx| tx.record_team_memory_retrievals(&p, &[id], at_ms))
            .unwrap();
        assert_eq!(counted, 1);
    }
    let replayed = alice.replay(NOW_MS + 300).await.unwrap();
    assert_eq!(replayed.use_batches, 1, "two searches, one batch");
    assert_eq!(alice_store.read(|tx| tx.team_use_queue()).unwrap(), 0);
    assert_eq!(alice.replay(NOW_MS + 400).await.unwrap().use_batches, 0);

    bob.pull(&p, NOW_MS + 500).await.unwrap();
    let seen = bob_store
        .read(|tx| tx.team_memories_with_use(&p, &[MemoryStatus::Active]))
        .unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].used.retrievals, 2);
    assert_eq!(seen[0].used.last_retrieved_ms, Some(NOW_MS + 200));
    assert_eq!(
        bob_store.read(|tx| tx.team_use_queue()).unwrap(),
        0,
        "what the team used is not bob's to send"
    );
}
