//! Two proxies (two pools) writing one project at once: no lost update, no duplicate, and a
//! reader following the version cursor meanwhile sees every change exactly once.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mc_store::{MemoryAction, MemorySource, MemoryStatus, TeamWrite};
use mc_team_store::{Applied, TeamStore};

use crate::support::{NOW_MS, add, open, project, team_store};

const WRITES_PER_PROXY: usize = 250;
const DISTINCT_FACTS: usize = 100;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writes_from_two_proxies_lose_nothing_and_duplicate_nothing() {
    let Some((first, url)) = team_store().await else {
        return;
    };
    let second = open(&url).await;
    let p = project("shared");
    let done = Arc::new(AtomicBool::new(false));
    let reader = tokio::spawn(follow_log(open(&url).await, p.clone(), Arc::clone(&done)));

    let mut writers = Vec::new();
    for (proxy, team) in [("a", first.clone()), ("b", second.clone())] {
        for n in 0..WRITES_PER_PROXY {
            let team = team.clone();
            let p = p.clone();
            writers.push(tokio::spawn(async move {
                let fact = format!("Fact number {} holds.", n % DISTINCT_FACTS);
                apply_until_answered(&team, &format!("{proxy}-{n}"), &p, &add(&fact)).await
            }));
        }
    }
    for writer in writers {
        writer.await.unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let followed = reader.await.unwrap();

    let live = first.memories(&p, &[MemoryStatus::Active]).await.unwrap();
    let contents: BTreeSet<_> = live.iter().map(|m| m.record.content.clone()).collect();
    assert_eq!(
        (live.len(), contents.len()),
        (DISTINCT_FACTS, DISTINCT_FACTS)
    );
    let seen: u64 = live.iter().map(|m| m.record.seen_count).sum();
    assert_eq!(
        seen,
        2 * WRITES_PER_PROXY as u64,
        "every restatement counted"
    );

    let log = first.changes_since(&p, 0).await.unwrap().log;
    assert_eq!(log.len(), DISTINCT_FACTS);
    assert!(log.iter().all(|entry| entry.action == MemoryAction::Added));
    let every: Vec<u64> = log.iter().map(|entry| entry.id).collect();
    assert_eq!(
        followed, every,
        "the cursor reader saw each change once, in order"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_edits_of_one_memory_are_each_logged_and_the_last_wins() {
    let Some((first, url)) = team_store().await else {
        return;
    };
    let second = open(&url).await;
    let p = project("shared");
    let id = first
        .apply("seed", &p, &add("Version zero."), NOW_MS)
        .await
        .unwrap()
        .memory_id();
    let mut writers = Vec::new();
    for n in 0..100_u64 {
        let team = if n % 2 == 0 {
            first.clone()
        } else {
            second.clone()
        };
        let p = p.clone();
        writers.push(tokio::spawn(async move {
            let edit = TeamWrite::Edit {
                id,
                category: None,
                content: Some(format!("Version {}.", n + 1)),
                actor: MemorySource::Agent,
            };
            apply_until_answered(&team, &format!("edit-{n}"), &p, &edit).await;
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
    let changes = first.changes_since(&p, 0).await.unwrap();
    let edits = changes
        .log
        .iter()
        .filter(|e| e.action == MemoryAction::Changed)
        .count();
    assert_eq!(edits, 100, "no edit was lost");
    let memory = first.memory(&p, id).await.unwrap().unwrap();
    assert_ne!(memory.record.content, "Version zero.");
    assert_eq!(
        second.memory(&p, id).await.unwrap().unwrap(),
        memory,
        "both proxies read the same final row"
    );
}

/// Applies `write` as a proxy's queue would: a pool that gave no connection in time (500
/// writers on 16 connections, serialised by the project's lock) is tried again under the
/// same write id, which the server applies once.
async fn apply_until_answered(
    team: &TeamStore,
    write_id: &str,
    p: &mc_core::ProjectId,
    write: &TeamWrite,
) -> Applied {
    loop {
        match team.apply(write_id, p, write, NOW_MS).await {
            Ok(applied) => return applied,
            Err(error) if error.is_retryable() => tokio::task::yield_now().await,
            Err(error) => panic!("{write_id}: {error}"),
        }
    }
}

/// Reads the log by cursor until `done`, then once more; returns the versions seen.
async fn follow_log(team: TeamStore, p: mc_core::ProjectId, done: Arc<AtomicBool>) -> Vec<u64> {
    let mut cursor = 0;
    let mut seen = Vec::new();
    loop {
        let finished = done.load(Ordering::SeqCst);
        let changes = team.changes_since(&p, cursor).await.unwrap();
        seen.extend(changes.log.iter().map(|entry| entry.id));
        cursor = changes.head;
        if finished {
            return seen;
        }
        tokio::task::yield_now().await;
    }
}
