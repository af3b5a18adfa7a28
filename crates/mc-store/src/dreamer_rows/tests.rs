use std::sync::Arc;

use mc_core::head::MemoryCategory;
use proptest::prelude::*;

use super::*;
use crate::memory_rows::NewMemory;
use crate::{Added, Store};

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("context.db")).unwrap();
    (dir, store)
}

fn project() -> ProjectId {
    ProjectId::new("git:abc").unwrap()
}

fn add(store: &Store, content: &str) -> u64 {
    store
        .write(|tx| {
            tx.add_memory(
                &project(),
                &NewMemory {
                    category: MemoryCategory::Architecture,
                    content,
                    source: MemorySource::Historian,
                    permanent: false,
                },
                1,
            )
        })
        .map(Added::id)
        .unwrap()
}

#[test]
fn a_held_lease_is_refused_to_others_until_it_lapses_then_taken_over() {
    let (_dir, store) = store();
    let take = |owner: &str, now: i64| {
        store
            .write(|tx| tx.take_dreamer_lease("memories:p", owner, now, 100))
            .unwrap()
    };
    assert!(take("a", 0));
    assert!(!take("b", 50));
    assert!(take("a", 60), "the holder renews");
    assert!(!take("b", 159), "renewed until 160");
    assert!(take("b", 160), "lapsed: taken over");
    let lease = store.read(|tx| tx.dreamer_lease("memories:p")).unwrap();
    assert_eq!(
        lease,
        Some(Lease {
            domain: "memories:p".into(),
            owner: "b".into(),
            acquired_ms: 160,
            expires_ms: 260
        })
    );
    store
        .write(|tx| tx.release_dreamer_lease("memories:p", "a"))
        .unwrap();
    assert!(!take("a", 170), "only the holder releases");
    store
        .write(|tx| tx.release_dreamer_lease("memories:p", "b"))
        .unwrap();
    assert!(take("a", 171));
}

/// What a scheduler does to the lease, on a clock that only moves forward.
#[derive(Debug, Clone)]
enum Op {
    Take { owner: usize, after_ms: i64 },
    Release { owner: usize, after_ms: i64 },
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..3usize, 0..80i64).prop_map(|(owner, after_ms)| Op::Take { owner, after_ms }),
        1 => (0..3usize, 0..80i64).prop_map(|(owner, after_ms)| Op::Release { owner, after_ms }),
    ]
}

proptest! {
    /// Three schedulers on one store: whenever one is told it holds the domain, no other is
    /// inside a lease it was granted and has not released; and a lease past its expiry is
    /// always taken over by whoever asks.
    #[test]
    fn schedulers_never_overlap_and_expired_leases_are_taken_over(
        ops in proptest::collection::vec(arb_op(), 1..60),
    ) {
        const TTL: i64 = 100;
        let (_dir, store) = store();
        // What each scheduler believes: held until this time (exclusive).
        let mut held_until: [Option<i64>; 3] = [None; 3];
        let mut now = 0;
        for op in ops {
            match op {
                Op::Take { owner, after_ms } => {
                    now += after_ms;
                    let name = format!("s{owner}");
                    let granted = store
                        .write(|tx| tx.take_dreamer_lease("d", &name, now, TTL))
                        .unwrap();
                    let others_live = held_until
                        .iter()
                        .enumerate()
                        .any(|(other, until)| other != owner && until.is_some_and(|u| u > now));
                    if granted {
                        prop_assert!(!others_live, "{name} granted at {now} over {held_until:?}");
                        held_until[owner] = Some(now + TTL);
                    } else {
                        prop_assert!(others_live, "{name} refused at {now} with {held_until:?}");
                        held_until[owner] = None;
                    }
                }
                Op::Release { owner, after_ms } => {
                    now += after_ms;
                    store
                        .write(|tx| tx.release_dreamer_lease("d", &format!("s{owner}")))
                        .unwrap();
                    held_until[owner] = None;
                }
            }
        }
    }
}

/// Two store handles on one file, as two proxies would have, race for the lease from two
/// threads: every instant has at most one holder.
#[test]
fn two_processes_racing_never_both_hold_the_domain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("context.db");
    let stores = [
        Arc::new(Store::open(&path).unwrap()),
        Arc::new(Store::open(&path).unwrap()),
    ];
    let handles: Vec<_> = stores
        .iter()
        .enumerate()
        .map(|(index, store)| {
            let store = Arc::clone(store);
            std::thread::spawn(move || {
                let owner = format!("proxy-{index}");
                (0..200i64)
                    .filter(|now| {
                        store
                            .write(|tx| tx.take_dreamer_lease("d", &owner, *now, 1))
                            .unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let granted: Vec<Vec<i64>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    // A 1 ms lease taken at `now` lapses at `now + 1`: two owners granted at the same instant
    // would both believe they held it.
    for now in &granted[0] {
        assert!(!granted[1].contains(now), "both held the domain at {now}");
    }
    assert!(!granted[0].is_empty() || !granted[1].is_empty());
}

#[test]
fn maintenance_changes_are_logged_with_the_dreamer_and_the_task() {
    let (_dir, store) = store();
    let p = project();
    let stale = add(&store, "The parser lives in src/parse.rs");
    let verbose = add(
        &store,
        "The store uses SQLite in WAL mode, as the docs say at length",
    );
    let twin_a = add(&store, "Tests run with cargo nextest");
    let twin_b = add(&store, "Use cargo nextest to run the tests");
    store
        .write(|tx| {
            tx.dreamer_archive_memory(&p, stale, "verify_memories", "src/parse.rs is gone", 5)?;
            tx.dreamer_rewrite_memory(
                &p,
                verbose,
                "The store uses SQLite in WAL mode",
                "rewrite_verbose_memories",
                "shorter",
                6,
            )?;
            tx.dreamer_merge_memories(
                &p,
                twin_a,
                &[twin_b],
                "Tests run with `cargo nextest run`",
                "consolidate_memories",
                7,
            )
        })
        .unwrap();
    let log = store.read(|tx| tx.memory_log_since(&p, 4)).unwrap();
    let seen: Vec<_> = log
        .iter()
        .map(|entry| {
            (
                entry.memory_id,
                entry.action,
                entry.actor,
                entry.task.as_deref(),
                entry.detail.as_deref(),
            )
        })
        .collect();
    let dreamer = Some(MemorySource::Dreamer);
    assert_eq!(
        seen,
        [
            (
                stale,
                MemoryAction::Archived,
                dreamer,
                Some("verify_memories"),
                Some("src/parse.rs is gone")
            ),
            (
                verbose,
                MemoryAction::Changed,
                dreamer,
                Some("rewrite_verbose_memories"),
                Some("content: shorter")
            ),
            (
                twin_b,
                MemoryAction::Superseded,
                dreamer,
                Some("consolidate_memories"),
                Some("by 3")
            ),
            (
                twin_a,
                MemoryAction::Changed,
                dreamer,
                Some("consolidate_memories"),
                Some("content: merged")
            ),
        ]
    );
    let kept = store.read(|tx| tx.memory(&p, twin_a)).unwrap().unwrap();
    assert_eq!(kept.record.content, "Tests run with `cargo nextest run`");
    let gone = store.read(|tx| tx.memory(&p, twin_b)).unwrap().unwrap();
    assert_eq!(
        (gone.record.status, gone.superseded_by),
        (MemoryStatus::Archived, Some(twin_a))
    );
}

#[test]
fn the_dreamer_leaves_permanent_and_archived_memories_alone() {
    let (_dir, store) = store();
    let p = project();
    let kept = store
        .write(|tx| {
            tx.add_memory(
                &p,
                &NewMemory {
                    category: MemoryCategory::ProjectRules,
                    content: "Never force-push main",
                    source: MemorySource::Operator,
                    permanent: true,
                },
                1,
            )
        })
        .unwrap()
        .id();
    let error = store
        .write(|tx| tx.dreamer_archive_memory(&p, kept, "verify_memories", "unused", 2))
        .unwrap_err();
    assert!(error.to_string().contains("permanent"), "{error}");
    let twin = add(&store, "x is y");
    let error = store
        .write(|tx| tx.dreamer_merge_memories(&p, twin, &[twin], "x", "consolidate_memories", 3))
        .unwrap_err();
    assert!(error.to_string().contains("once"), "{error}");
    assert_eq!(store.read(|tx| tx.memory_log_since(&p, 2)).unwrap(), []);
}

#[test]
fn runs_read_back_newest_first_per_project() {
    let (_dir, store) = store();
    let run = |task: &str, project: &str, started_ms| DreamerRun {
        id: 0,
        task: task.into(),
        project: ProjectId::new(project).unwrap(),
        started_ms,
        finished_ms: started_ms + 10,
        outcome: RunOutcome::Failed,
        model: Some("claude-haiku-4-5".into()),
        model_calls: 2,
        input_tokens: 1200,
        output_tokens: 80,
        cost_usd: 0.0016,
        changes: 0,
        failure_class: Some("overloaded".into()),
        provider_error: Some("Overloaded".into()),
        detail: None,
    };
    let first = run("verify_memories", "git:a", 1);
    let second = run("consolidate_memories", "git:b", 2);
    let ids = store
        .write(|tx| {
            Ok((
                tx.record_dreamer_run(&first)?,
                tx.record_dreamer_run(&second)?,
            ))
        })
        .unwrap();
    let all = store.read(|tx| tx.dreamer_runs(None, 10)).unwrap();
    assert_eq!(
        all,
        [
            DreamerRun {
                id: ids.1,
                ..second
            },
            DreamerRun {
                id: ids.0,
                ..first.clone()
            }
        ]
    );
    let of_a = store
        .read(|tx| tx.dreamer_runs(Some(&ProjectId::new("git:a").unwrap()), 10))
        .unwrap();
    assert_eq!(of_a, [DreamerRun { id: ids.0, ..first }]);
}
