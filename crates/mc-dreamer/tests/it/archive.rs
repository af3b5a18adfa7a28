//! `archive_stale_memories` through the runner on a real store: no model is asked, a memory
//! nobody used for the threshold is archived with the task and the reason in the change log,
//! one a search returned or someone restated within it stays, a permanent one stays, and a
//! second run changes nothing.

use mc_core::ProjectId;
use mc_core::head::MemoryCategory;
use mc_dreamer::{Limits, Runner, Task, TaskSettings};
use mc_store::{MemoryAction, MemorySource, MemoryStatus, NewMemory, RunOutcome, Store};
use proptest::prelude::*;

use crate::fixture::{EVENING_MS, FakeModel, project};

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

fn add(store: &Store, content: &str, permanent: bool, at_ms: i64) -> u64 {
    let memory = NewMemory {
        category: MemoryCategory::ProjectRules,
        content,
        source: MemorySource::Agent,
        permanent,
    };
    store
        .write(|tx| tx.add_memory(&project(), &memory, at_ms))
        .unwrap()
        .id()
}

fn status(store: &Store, id: u64) -> MemoryStatus {
    store
        .read(|tx| tx.memory(&project(), id))
        .unwrap()
        .unwrap()
        .record
        .status
}

fn run(store: &Store, model: &FakeModel, days: u32) -> mc_store::DreamerRun {
    let clock = || EVENING_MS;
    let runner = Runner {
        calls: &crate::fixture::NoCalls,
        store,
        model,
        owner: "archive-test",
        clock: &clock,
        limits: Limits::default(),
        settings: TaskSettings {
            archive_after_days: days,
            ..TaskSettings::default()
        },
        team: None,
    };
    runner
        .run(Task::ArchiveStaleMemories, &project(), None)
        .unwrap()
}

#[test]
fn only_memories_nothing_touched_within_the_threshold_are_archived_and_logged() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("context.db")).unwrap();
    let long_ago = EVENING_MS - 200 * DAY_MS;
    let forgotten = add(&store, "Use tabs in the Makefile.", false, long_ago);
    let searched = add(&store, "The cache lives in src/cache.rs.", false, long_ago);
    let restated = add(&store, "Never push to main.", false, long_ago);
    let pinned = add(&store, "The licence is MIT.", true, long_ago);
    let recent = add(&store, "Ports are even.", false, EVENING_MS - DAY_MS);
    store
        .write(|tx| {
            tx.record_memory_retrievals(&project(), &[searched], EVENING_MS - 5 * DAY_MS)?;
            tx.add_memory(
                &project(),
                &NewMemory {
                    category: MemoryCategory::ProjectRules,
                    content: "never push to MAIN",
                    source: MemorySource::Historian,
                    permanent: false,
                },
                EVENING_MS - 10 * DAY_MS,
            )
        })
        .unwrap();
    let model = FakeModel::new(|_| panic!("archiving asks no model"));

    let first = run(&store, &model, 90);
    assert_eq!(
        (first.outcome, first.changes, first.model_calls),
        (RunOutcome::Done, 1, 0),
        "{:?}",
        first.detail
    );
    assert_eq!(status(&store, forgotten), MemoryStatus::Archived);
    for kept in [searched, restated, recent] {
        assert_eq!(status(&store, kept), MemoryStatus::Active);
    }
    assert_eq!(status(&store, pinned), MemoryStatus::Permanent);
    let log = store.read(|tx| tx.memory_log_since(&project(), 0)).unwrap();
    let archived: Vec<_> = log
        .iter()
        .filter(|entry| entry.action == MemoryAction::Archived)
        .map(|entry| {
            (
                entry.memory_id,
                entry.actor,
                entry.task.as_deref(),
                entry.detail.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        archived,
        [(
            forgotten,
            Some(MemorySource::Dreamer),
            Some("archive_stale_memories"),
            Some("nothing used or restated it for 200 days (last stored on 2026-05-19)")
        )]
    );

    let again = run(&store, &model, 90);
    assert_eq!((again.outcome, again.changes), (RunOutcome::Done, 0));
    assert_eq!(
        store
            .read(|tx| tx.memory_log_since(&project(), 0))
            .unwrap()
            .len(),
        log.len()
    );
    assert_eq!(model.calls(), 0);
}

/// One memory of a generated project: when it was stored and last returned by a search,
/// days before the run, and whether it is permanent.
#[derive(Debug, Clone)]
struct Planted {
    stored_days_ago: i64,
    searched_days_ago: Option<i64>,
    permanent: bool,
}

fn arb_planted() -> impl Strategy<Value = Planted> {
    (0i64..400, proptest::option::of(0i64..400), any::<bool>()).prop_map(
        |(stored, searched, permanent)| Planted {
            stored_days_ago: stored,
            searched_days_ago: searched.map(|days| days.min(stored)),
            permanent,
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Archiving never touches a memory used within the threshold, retires every active one
    /// that was not, and is idempotent.
    #[test]
    fn archiving_is_idempotent_and_spares_what_was_used_within_the_threshold(
        planted in proptest::collection::vec(arb_planted(), 1..12),
        days in 7u32..300,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let ids: Vec<u64> = planted
            .iter()
            .enumerate()
            .map(|(index, memory)| {
                let content = format!("Rule number {index} holds.");
                let id = add(&store, &content, memory.permanent, EVENING_MS - memory.stored_days_ago * DAY_MS);
                if let Some(searched) = memory.searched_days_ago {
                    store
                        .write(|tx| tx.record_memory_retrievals(&project(), &[id], EVENING_MS - searched * DAY_MS))
                        .unwrap();
                }
                id
            })
            .collect();
        let model = FakeModel::new(|_| panic!("archiving asks no model"));
        let first = run(&store, &model, days);
        let mut expected = 0;
        for (memory, id) in planted.iter().zip(&ids) {
            let last = memory.searched_days_ago.unwrap_or(memory.stored_days_ago);
            let stale = !memory.permanent && last > i64::from(days);
            expected += u32::from(stale);
            let want = match (memory.permanent, stale) {
                (true, _) => MemoryStatus::Permanent,
                (false, true) => MemoryStatus::Archived,
                (false, false) => MemoryStatus::Active,
            };
            prop_assert_eq!(status(&store, *id), want, "{:?}", memory);
        }
        prop_assert_eq!(first.changes, expected);
        let second = run(&store, &model, days);
        prop_assert_eq!(second.changes, 0);
    }
}

#[test]
fn a_project_of_no_model_and_no_folder_is_still_archived() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("context.db")).unwrap();
    let id = add(&store, "Use tabs.", false, EVENING_MS - 365 * DAY_MS);
    let clock = || EVENING_MS;
    let runner = Runner {
        calls: &crate::fixture::NoCalls,
        store: &store,
        model: &crate::scheduler::NoModel,
        owner: "archive-test",
        clock: &clock,
        limits: Limits::default(),
        settings: TaskSettings::default(),
        team: None,
    };
    let run = runner
        .run(
            Task::ArchiveStaleMemories,
            &ProjectId::new("git:feedface").unwrap(),
            None,
        )
        .unwrap();
    assert_eq!(
        (run.outcome, run.changes),
        (RunOutcome::Done, 1),
        "{:?}",
        run.detail
    );
    assert_eq!(status(&store, id), MemoryStatus::Archived);
}
