//! The dreamer's memory tasks on a team's memories: with a team store, `verify_memories`
//! and `archive_stale_memories` read the team's memories (not the local table) and their
//! changes take the team's write path (queued, sent, applied once, logged with the dreamer
//! as actor and the task's name), so another machine's store sees them. A verdict about a
//! memory someone edited elsewhere while the model was asked is refused by the team store,
//! and the edit stands. Two stores stand for two machines on one scratch PostgreSQL
//! database. Needs `MC_TEST_PG_URL`; without it each test says it skipped.

use mc_core::head::MemoryCategory;
use mc_dreamer::{Limits, Runner, Task, TaskSettings, TeamMemories};
use mc_store::{
    MemoryAction, MemorySource, MemoryStatus, NewMemory, ProjectKnowledge, RunOutcome, Store,
    StoredMemory, TeamCache, TeamWrite,
};
use mc_team_store::{TeamSync, Written, create_scratch_database};
use serde_json::json;
use tokio::runtime::Runtime;

use crate::fixture::{
    CHANGED_VALUE, EVENING_MS, FakeModel, PLAIN_RULE, STALE_FILE, TRUE_MEMORY, is_step, project,
    write_project,
};
use crate::team_lease::{sync_of, team_store};

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// One machine: its store file and its link to the team store.
pub(crate) struct Machine {
    _dir: tempfile::TempDir,
    pub(crate) store: Store,
    pub(crate) sync: TeamSync,
}

impl Machine {
    pub(crate) fn new(runtime: &Runtime, url: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let sync = sync_of(&store, team_store(runtime, url));
        Self {
            _dir: dir,
            store,
            sync,
        }
    }

    /// The project's memories as this machine's cache holds them after a sync.
    pub(crate) fn team_memories(&self, runtime: &Runtime) -> Vec<StoredMemory> {
        runtime
            .block_on(self.sync.pull(&project(), EVENING_MS))
            .unwrap();
        self.store
            .read(|tx| {
                TeamCache::new(tx).memories(
                    &project(),
                    &[
                        MemoryStatus::Active,
                        MemoryStatus::Permanent,
                        MemoryStatus::Archived,
                    ],
                )
            })
            .unwrap()
    }
}

/// A runtime and a fresh team database, or `None` (said) without `MC_TEST_PG_URL`.
pub(crate) fn scratch() -> Option<(Runtime, String)> {
    let Ok(server) = std::env::var("MC_TEST_PG_URL") else {
        eprintln!(
            "skipped: MC_TEST_PG_URL is not set (eval \"$(.ci/postgres-scratch start)\" sets it)"
        );
        return None;
    };
    let runtime = Runtime::new().unwrap();
    let url = runtime
        .block_on(create_scratch_database(&server))
        .unwrap_or_else(|error| panic!("MC_TEST_PG_URL is set but unusable: {error}"));
    Some((runtime, url))
}

/// Writes the fixture's four memories to the team store through `machine`, stored at
/// `at_ms`; returns their team ids in fixture order.
pub(crate) fn seed_team(runtime: &Runtime, machine: &Machine, at_ms: i64) -> Vec<u64> {
    [TRUE_MEMORY, STALE_FILE, CHANGED_VALUE, PLAIN_RULE]
        .into_iter()
        .map(|content| {
            let write = TeamWrite::Add {
                category: MemoryCategory::Architecture,
                content: content.to_owned(),
                source: MemorySource::Historian,
                permanent: false,
            };
            match runtime
                .block_on(machine.sync.write(&project(), write, at_ms))
                .unwrap()
            {
                Written::Landed(applied) => applied.memory_id(),
                Written::Queued(id) => panic!("the team store did not take {id}"),
            }
        })
        .collect()
}

pub(crate) fn status_of(memories: &[StoredMemory], id: u64) -> (String, MemoryStatus) {
    let memory = memories.iter().find(|memory| memory.id == id).unwrap();
    (memory.record.content.clone(), memory.record.status)
}

/// Runs `task` on alice's machine, its memories in the team store, asking `model`.
pub(crate) fn dream(
    runtime: &Runtime,
    alice: &Machine,
    model: &FakeModel,
    task: Task,
    code: &std::path::Path,
) -> mc_store::DreamerRun {
    let team = TeamMemories::new(alice.sync.clone(), runtime.handle().clone(), "serve-1").unwrap();
    let clock = || EVENING_MS;
    let runner = Runner {
        calls: &crate::fixture::NoCalls,
        store: &alice.store,
        model,
        owner: "serve-1",
        clock: &clock,
        limits: Limits::default(),
        settings: TaskSettings::default(),
        team: Some(&team),
    };
    runner.run(task, &project(), Some(code)).unwrap()
}

#[test]
fn a_stale_team_memory_archived_by_verify_memories_is_archived_on_the_other_machine() {
    let Some((runtime, url)) = scratch() else {
        return;
    };
    let code = tempfile::tempdir().unwrap();
    write_project(code.path());
    let (alice, bob) = (Machine::new(&runtime, &url), Machine::new(&runtime, &url));
    // Alice's local table holds a memory of the same project, from before the team store:
    // the task must not read or change it.
    alice
        .store
        .write(|tx| {
            let memory = NewMemory {
                category: MemoryCategory::Architecture,
                content: STALE_FILE,
                source: MemorySource::Agent,
                permanent: false,
            };
            tx.add_memory(&project(), &memory, EVENING_MS - DAY_MS)
        })
        .unwrap();
    let ids = seed_team(&runtime, &bob, EVENING_MS - DAY_MS);
    let (stale, changed) = (ids[1], ids[2]);
    let _cached = bob.team_memories(&runtime);
    let log_from = bob
        .store
        .read(|tx| TeamCache::new(tx).memory_log_head(&project()))
        .unwrap();

    let mut steps = 0;
    let model = FakeModel::new(move |request| {
        if !is_step(request) {
            return Ok(json!({"verdicts": [{
                "memory_id": changed, "action": "update",
                "content": "The default port is DEFAULT_PORT = 4141",
                "reason": "src/config.rs sets 4141"
            }]}));
        }
        steps += 1;
        Ok(if steps == 1 {
            json!({"calls": [
                {"tool": "archive_memory", "memory_id": stale, "reason": "src/old_parser.rs was deleted"},
                {"tool": "list_files"}
            ]})
        } else {
            json!({"calls": [{"tool": "finish"}]})
        })
    });
    let run = dream(&runtime, &alice, &model, Task::VerifyMemories, code.path());
    assert_eq!(run.outcome, RunOutcome::Done, "{run:?}");
    assert_eq!(run.changes, 2, "{run:?}");

    // Bob's machine sees both changes, logged as the dreamer's, naming the task.
    let seen = bob.team_memories(&runtime);
    assert_eq!(
        status_of(&seen, stale),
        (STALE_FILE.to_owned(), MemoryStatus::Archived)
    );
    assert_eq!(
        status_of(&seen, changed),
        (
            "The default port is DEFAULT_PORT = 4141".to_owned(),
            MemoryStatus::Active
        )
    );
    assert_eq!(status_of(&seen, ids[0]).1, MemoryStatus::Active);
    let log = bob
        .store
        .read(|tx| TeamCache::new(tx).memory_log_since(&project(), log_from))
        .unwrap();
    let logged: Vec<_> = log
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
    assert_eq!(
        logged,
        [
            (
                changed,
                MemoryAction::Changed,
                Some(MemorySource::Dreamer),
                Some("verify_memories"),
                Some("content: src/config.rs sets 4141")
            ),
            (
                stale,
                MemoryAction::Archived,
                Some(MemorySource::Dreamer),
                Some("verify_memories"),
                Some("src/old_parser.rs was deleted")
            ),
        ]
    );
    // Nothing waits in alice's queue, her local table is as it was, the lease is back.
    assert_eq!(alice.store.read(|tx| tx.team_queue()).unwrap(), (0, None));
    let local = alice
        .store
        .read(|tx| tx.memories(&project(), &[MemoryStatus::Active]))
        .unwrap();
    assert_eq!(local.len(), 1);
    assert_eq!(local[0].record.content, STALE_FILE);
    let domain = Task::VerifyMemories.domain(&project());
    assert_eq!(
        runtime
            .block_on(alice.sync.team().dreamer_lease(&domain))
            .unwrap(),
        None
    );
}

#[test]
fn an_edit_made_elsewhere_while_the_model_is_asked_wins_over_the_verdict() {
    let Some((runtime, url)) = scratch() else {
        return;
    };
    let code = tempfile::tempdir().unwrap();
    write_project(code.path());
    let (alice, bob) = (Machine::new(&runtime, &url), Machine::new(&runtime, &url));
    let ids = seed_team(&runtime, &bob, EVENING_MS - DAY_MS);
    let changed = ids[2];
    let edited = "The default port is DEFAULT_PORT = 4141, set in src/config.rs";
    let (bob_sync, handle) = (bob.sync.clone(), runtime.handle().clone());
    let model = FakeModel::new(move |request| {
        if is_step(request) {
            return Ok(json!({"calls": [{"tool": "finish"}]}));
        }
        // While alice's dreamer waits for its model, bob fixes the memory by hand.
        let edit = TeamWrite::Edit {
            id: changed,
            category: None,
            content: Some(edited.to_owned()),
            actor: MemorySource::Operator,
        };
        handle
            .block_on(bob_sync.write(&project(), edit, EVENING_MS))
            .unwrap();
        Ok(json!({"verdicts": [{
            "memory_id": changed, "action": "archive", "reason": "the port is 4141 now"
        }]}))
    });
    let run = dream(&runtime, &alice, &model, Task::VerifyMemories, code.path());
    assert_eq!(run.outcome, RunOutcome::Done, "{run:?}");
    assert_eq!(
        run.changes, 0,
        "the team store refused the verdict: {run:?}"
    );
    assert_eq!(
        status_of(&alice.team_memories(&runtime), changed),
        (edited.to_owned(), MemoryStatus::Active)
    );
    assert_eq!(alice.store.read(|tx| tx.team_queue()).unwrap(), (0, None));
}

#[test]
fn archive_stale_memories_retires_the_teams_untouched_memories_and_keeps_the_ones_searched_here() {
    let Some((runtime, url)) = scratch() else {
        return;
    };
    let code = tempfile::tempdir().unwrap();
    let (alice, bob) = (Machine::new(&runtime, &url), Machine::new(&runtime, &url));
    let ids = seed_team(&runtime, &bob, EVENING_MS - 100 * DAY_MS);
    // A search on alice's machine returned the first memory five days ago.
    let _cached = alice.team_memories(&runtime);
    let counted = alice
        .store
        .write(|tx| {
            tx.record_team_memory_retrievals(&project(), &[ids[0], 999], EVENING_MS - 5 * DAY_MS)
        })
        .unwrap();
    assert_eq!(counted, 1, "an id the cache does not hold is not counted");

    let model = FakeModel::new(|_| panic!("archive_stale_memories asks no model"));
    let run = dream(
        &runtime,
        &alice,
        &model,
        Task::ArchiveStaleMemories,
        code.path(),
    );
    assert_eq!(run.outcome, RunOutcome::Done, "{run:?}");
    assert_eq!(run.changes, 3);
    assert_eq!(
        run.detail.as_deref(),
        Some("4 active memories, 3 untouched for 90 days or more archived")
    );
    let seen = bob.team_memories(&runtime);
    let statuses: Vec<_> = ids.iter().map(|id| status_of(&seen, *id).1).collect();
    assert_eq!(
        statuses,
        [
            MemoryStatus::Active,
            MemoryStatus::Archived,
            MemoryStatus::Archived,
            MemoryStatus::Archived
        ]
    );
    let log = bob
        .store
        .read(|tx| TeamCache::new(tx).memory_log_since(&project(), 0))
        .unwrap();
    let archived = log
        .iter()
        .filter(|entry| entry.action == MemoryAction::Archived)
        .collect::<Vec<_>>();
    assert_eq!(archived.len(), 3);
    for entry in archived {
        assert_eq!(entry.actor, Some(MemorySource::Dreamer));
        assert_eq!(entry.task.as_deref(), Some("archive_stale_memories"));
        assert_eq!(
            entry.detail.as_deref(),
            Some("nothing used or restated it for 100 days (last stored on 2026-08-27)")
        );
    }
    // A second run finds nothing more to do.
    let again = dream(
        &runtime,
        &alice,
        &model,
        Task::ArchiveStaleMemories,
        code.path(),
    );
    assert_eq!(again.changes, 0, "{again:?}");
}

#[test]
fn consolidate_memories_merges_two_team_memories_into_one_on_every_machine() {
    let Some((runtime, url)) = scratch() else {
        return;
    };
    let code = tempfile::tempdir().unwrap();
    let (alice, bob) = (Machine::new(&runtime, &url), Machine::new(&runtime, &url));
    let mut ids = Vec::new();
    for content in [
        "Run the tests with cargo nextest before pushing.",
        "Before pushing, run the tests with cargo nextest.",
    ] {
        let write = TeamWrite::Add {
            category: MemoryCategory::ProjectRules,
            content: content.to_owned(),
            source: MemorySource::Agent,
            permanent: false,
        };
        let written = runtime
            .block_on(bob.sync.write(&project(), write, EVENING_MS - DAY_MS))
            .unwrap();
        let Written::Landed(applied) = written else {
            panic!("not landed: {written:?}");
        };
        ids.push(applied.memory_id());
    }
    let (keep, other) = (ids[0], ids[1]);
    let model = FakeModel::new(move |_| {
        Ok(json!({"merges": [{
            "keep": keep, "others": [other],
            "content": "Run the tests with cargo nextest before every push."
        }]}))
    });
    let run = dream(
        &runtime,
        &alice,
        &model,
        Task::ConsolidateMemories,
        code.path(),
    );
    assert_eq!(run.outcome, RunOutcome::Done, "{run:?}");
    assert_eq!(run.changes, 2, "{run:?}");
    let seen = bob.team_memories(&runtime);
    assert_eq!(
        status_of(&seen, keep),
        (
            "Run the tests with cargo nextest before every push.".to_owned(),
            MemoryStatus::Active
        )
    );
    let retired = seen.iter().find(|memory| memory.id == other).unwrap();
    assert_eq!(retired.record.status, MemoryStatus::Archived);
    assert_eq!(retired.superseded_by, Some(keep));
}
