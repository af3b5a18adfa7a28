//! Team-wide use keeps a team memory alive: a memory a colleague's agent found, or the
//! colleague's historian stated again, on another machine is not archived by
//! `archive_stale_memories` run here, though nothing on this machine ever touched it. Two
//! stores stand for two machines on one scratch PostgreSQL database. Needs
//! `MC_TEST_PG_URL`; without it the test says it skipped.

use mc_core::SessionId;
use mc_core::head::MemoryCategory;
use mc_dreamer::Task;
use mc_store::{MemoryStatus, RunOutcome};

use crate::fixture::{CHANGED_VALUE, EVENING_MS, FakeModel, project};
use crate::team_maintenance::{Machine, dream, scratch, seed_team, status_of};

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

#[test]
fn use_on_one_machine_keeps_a_team_memory_alive_for_the_task_run_on_another() {
    let Some((runtime, url)) = scratch() else {
        return;
    };
    let code = tempfile::tempdir().unwrap();
    let (alice, bob) = (Machine::new(&runtime, &url), Machine::new(&runtime, &url));
    let ids = seed_team(&runtime, &bob, EVENING_MS - 100 * DAY_MS);
    let _cached = bob.team_memories(&runtime);
    // On bob's machine only: a search returned the first memory five days ago, and bob's
    // historian stated the third one's fact again three days ago.
    bob.store
        .write(|tx| {
            tx.record_team_memory_retrievals(&project(), &[ids[0]], EVENING_MS - 5 * DAY_MS)
        })
        .unwrap();
    let session = SessionId::new("bob-session").unwrap();
    bob.store
        .write(|tx| {
            tx.store_facts(
                &mc_store::history_scope(&session, Some(project().as_str())),
                &session,
                &[(MemoryCategory::ConfigValues, CHANGED_VALUE.to_owned())],
                EVENING_MS - 3 * DAY_MS,
            )?;
            tx.queue_historian_facts_for_team(&project(), EVENING_MS - 3 * DAY_MS)
        })
        .unwrap();
    // Bob's background sync sends both in one batch.
    let replayed = runtime
        .block_on(bob.sync.replay(EVENING_MS - DAY_MS))
        .unwrap();
    assert_eq!(replayed.use_batches, 1, "{replayed:?}");

    let model = FakeModel::new(|_| panic!("archive_stale_memories asks no model"));
    let run = dream(
        &runtime,
        &alice,
        &model,
        Task::ArchiveStaleMemories,
        code.path(),
    );
    assert_eq!(run.outcome, RunOutcome::Done, "{run:?}");
    assert_eq!(
        run.detail.as_deref(),
        Some("4 active memories, 2 untouched for 90 days or more archived")
    );
    let seen = bob.team_memories(&runtime);
    let statuses: Vec<_> = ids.iter().map(|id| status_of(&seen, *id).1).collect();
    assert_eq!(
        statuses,
        [
            MemoryStatus::Active,
            MemoryStatus::Archived,
            MemoryStatus::Active,
            MemoryStatus::Archived
        ],
        "what bob's machine used stays; what nobody touched goes"
    );
    let used = alice
        .store
        .read(|tx| tx.team_memories_with_use(&project(), &[MemoryStatus::Active]))
        .unwrap();
    let touched: Vec<_> = used
        .iter()
        .map(|memory| (memory.memory.id, memory.last_touched_ms()))
        .collect();
    assert_eq!(
        touched,
        [
            (ids[0], EVENING_MS - 5 * DAY_MS),
            (ids[2], EVENING_MS - 3 * DAY_MS)
        ],
        "alice's machine knows when bob's used them"
    );
}
