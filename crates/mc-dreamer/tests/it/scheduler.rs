//! The scheduler on a simulated clock with a model the test scripts: leases, cron, backoff,
//! the stop after identical failures, and a failing model that never changes a memory.

use std::cell::Cell;
use std::collections::HashMap;
use std::time::Duration;

use mc_core::config::{DreamerConfig, DreamerSchedules, TaskSchedule};
use mc_dreamer::{BACKOFF_BASE_MS, Limits, Runner, Scheduler, Task, TaskSettings};
use mc_llm::LlmError;
use mc_store::RunOutcome;
use serde_json::json;

use crate::fixture::{
    Answer, EVENING_MS, FakeModel, NoCalls, is_step, label, memories, or_finish, project,
    provider_error, store_with_memories, untouched, write_project,
};

pub const MINUTE: i64 = 60_000;

/// 03:30 UTC on the morning after [`EVENING_MS`]: verify_memories' default time.
pub const NIGHTLY_MS: i64 = EVENING_MS + 6 * 60 * MINUTE + 30 * MINUTE;

fn folders(root: &std::path::Path) -> HashMap<mc_core::ProjectId, String> {
    HashMap::from([(project(), root.to_string_lossy().into_owned())])
}

/// The default schedules with only `verify_memories` on.
pub fn verify_only() -> DreamerConfig {
    let off = TaskSchedule::Off;
    let schedules = DreamerSchedules {
        verify_memories: DreamerSchedules::default().verify_memories,
        consolidate_memories: off.clone(),
        archive_stale_memories: off.clone(),
        rewrite_verbose_memories: off.clone(),
        maintain_docs: off.clone(),
        evaluate_smart_notes: off.clone(),
        promote_user_profile: off.clone(),
        pin_key_files: off,
    };
    DreamerConfig {
        schedules,
        ..DreamerConfig::default()
    }
}

#[test]
fn a_run_skips_while_another_scheduler_holds_the_lease_and_releases_its_own() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let store = store_with_memories(dir.path());
    let domain = Task::VerifyMemories.domain(&project());
    let model = FakeModel::new(|request| Ok(or_finish(request, json!({"verdicts": []}))));
    let now = Cell::new(EVENING_MS);
    let clock = || now.get();
    let runner = Runner {
        calls: &NoCalls,
        store: &store,
        model: &model,
        owner: "proxy-b",
        clock: &clock,
        limits: Limits::default(),
        settings: TaskSettings::default(),
        team: None,
    };

    store
        .write(|tx| tx.take_dreamer_lease(&domain, "proxy-a", EVENING_MS, 10 * MINUTE))
        .unwrap();
    let skipped = runner
        .run(Task::VerifyMemories, &project(), Some(dir.path()))
        .unwrap();
    assert_eq!(skipped.outcome, RunOutcome::Skipped);
    assert_eq!(
        skipped.detail.as_deref(),
        Some("another dreamer holds memories:git:feedface")
    );
    assert_eq!(model.calls(), 0);

    now.set(EVENING_MS + 10 * MINUTE);
    let done = runner
        .run(Task::VerifyMemories, &project(), Some(dir.path()))
        .unwrap();
    assert_eq!(
        done.outcome,
        RunOutcome::Done,
        "the lapsed lease is taken over"
    );
    assert_eq!(
        model.calls(),
        2,
        "one batch of candidates, one loop step over the memory naming a gone file"
    );
    assert_eq!(
        store.read(|tx| tx.dreamer_lease(&domain)).unwrap(),
        None,
        "released"
    );
    let recorded = store
        .read(|tx| tx.dreamer_runs(Some(&project()), 10))
        .unwrap();
    assert_eq!(
        recorded.iter().map(|run| run.outcome).collect::<Vec<_>>(),
        [RunOutcome::Done, RunOutcome::Skipped]
    );
}

#[test]
fn a_failing_model_never_changes_a_memory() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let store = store_with_memories(dir.path());
    let clock = || EVENING_MS;
    type Failing = Box<dyn Fn() -> Answer + Send>;
    let failures: Vec<(Failing, &str)> = vec![
        (
            Box::new(|| {
                Err(LlmError::Timeout {
                    endpoint: label(),
                    timeout: Duration::from_secs(1),
                })
            }),
            "timeout",
        ),
        (Box::new(|| Err(provider_error(529))), "overloaded"),
        (
            Box::new(|| Ok(json!({"summary": "all memories look fine"}))),
            "invalid_answer",
        ),
        (
            Box::new(|| {
                Ok(json!({"verdicts": [{"memory_id": 99, "action": "archive", "reason": "x"}]}))
            }),
            "invalid_answer",
        ),
    ];
    for (answer, class) in failures {
        let model = FakeModel::new(move |_| answer());
        let runner = Runner {
            calls: &NoCalls,
            store: &store,
            model: &model,
            owner: "cli",
            clock: &clock,
            limits: Limits::default(),
            settings: TaskSettings::default(),
            team: None,
        };
        let run = runner
            .run(Task::VerifyMemories, &project(), Some(dir.path()))
            .unwrap();
        assert_eq!(
            (run.outcome, run.failure_class.as_deref()),
            (RunOutcome::Failed, Some(class))
        );
        assert_eq!(run.changes, 0);
        assert_eq!(memories(&store), untouched(), "{class}");
    }
}

#[test]
fn nothing_runs_before_the_cron_time_and_a_rate_limit_backs_off_then_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let store = store_with_memories(dir.path());
    let limited = Cell::new(2);
    let model = FakeModel::new(move |request| {
        if limited.get() > 0 {
            limited.set(limited.get() - 1);
            return Err(provider_error(429));
        }
        Ok(or_finish(request, json!({"verdicts": []})))
    });
    let now = Cell::new(EVENING_MS);
    let clock = || now.get();
    let runner = Runner {
        calls: &NoCalls,
        store: &store,
        model: &model,
        owner: "proxy",
        clock: &clock,
        limits: Limits::default(),
        settings: TaskSettings::default(),
        team: None,
    };
    let mut scheduler = Scheduler::new(&verify_only(), EVENING_MS).unwrap();
    assert_eq!(scheduler.next_due_ms(), Some(NIGHTLY_MS));
    let folders = folders(dir.path());
    let mut tick = |at: i64| {
        now.set(at);
        scheduler.tick(&runner, &folders, at).unwrap()
    };
    assert!(tick(NIGHTLY_MS - 1).is_empty());
    let first = tick(NIGHTLY_MS);
    assert_eq!(first[0].failure_class.as_deref(), Some("rate_limited"));
    assert_eq!(
        first[0].provider_error.as_deref(),
        Some("HTTP 429: try later")
    );
    assert!(
        tick(NIGHTLY_MS + BACKOFF_BASE_MS - 1).is_empty(),
        "backing off"
    );
    let second = tick(NIGHTLY_MS + BACKOFF_BASE_MS);
    assert_eq!(second[0].failure_class.as_deref(), Some("rate_limited"));
    assert!(
        tick(NIGHTLY_MS + 2 * BACKOFF_BASE_MS).is_empty(),
        "the second wait doubles"
    );
    let third = tick(NIGHTLY_MS + 3 * BACKOFF_BASE_MS);
    assert_eq!(third[0].outcome, RunOutcome::Done);
    assert!(
        tick(NIGHTLY_MS + 4 * BACKOFF_BASE_MS).is_empty(),
        "done until tomorrow night"
    );
    assert_eq!(tick(NIGHTLY_MS + 24 * 60 * MINUTE).len(), 1);
}

#[test]
fn identical_failures_stop_the_task_until_restart() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let store = store_with_memories(dir.path());
    let model = FakeModel::new(|_| Ok(json!({"nonsense": true})));
    let now = Cell::new(EVENING_MS);
    let clock = || now.get();
    let runner = Runner {
        calls: &NoCalls,
        store: &store,
        model: &model,
        owner: "proxy",
        clock: &clock,
        limits: Limits::default(),
        settings: TaskSettings::default(),
        team: None,
    };
    let mut config = verify_only();
    config.schedules.verify_memories = TaskSchedule::Cron("0 * * * *".into());
    let mut scheduler = Scheduler::new(&config, EVENING_MS).unwrap();
    let folders = folders(dir.path());
    let mut runs = 0;
    for hour in 1..=6 {
        let at = EVENING_MS + hour * 60 * MINUTE;
        now.set(at);
        runs += scheduler.tick(&runner, &folders, at).unwrap().len();
    }
    assert_eq!(runs, 3, "stopped after the third identical failure");
    assert_eq!(
        scheduler.stopped(),
        [(Task::VerifyMemories, "invalid_answer".to_owned())]
    );
    assert_eq!(memories(&store), untouched());
    let restarted = Scheduler::new(&config, now.get()).unwrap();
    assert!(restarted.stopped().is_empty());
}

/// A model with nothing to ask: no session lent credentials and none is configured.
pub struct NoModel;

impl mc_dreamer::DreamerModel for NoModel {
    fn ask(
        &self,
        _project: &mc_core::ProjectId,
        _request: &mc_llm::StructuredRequest,
    ) -> Result<mc_llm::StructuredAnswer, LlmError> {
        Err(LlmError::NoEndpoints)
    }

    fn first_model(&self, _project: &mc_core::ProjectId) -> Option<String> {
        None
    }
}

#[test]
fn a_project_without_a_model_is_skipped_not_failed() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let store = store_with_memories(dir.path());
    let clock = || EVENING_MS;
    let runner = Runner {
        calls: &NoCalls,
        store: &store,
        model: &NoModel,
        owner: "proxy",
        clock: &clock,
        limits: Limits::default(),
        settings: TaskSettings::default(),
        team: None,
    };
    let run = runner
        .run(Task::VerifyMemories, &project(), Some(dir.path()))
        .unwrap();
    assert_eq!(run.outcome, RunOutcome::Skipped);
    assert!(
        run.detail
            .unwrap()
            .starts_with("no model to ask for this project")
    );
    let domain = Task::VerifyMemories.domain(&project());
    assert_eq!(store.read(|tx| tx.dreamer_lease(&domain)).unwrap(), None);
    assert_eq!(memories(&store), untouched());
}

#[test]
fn a_memory_edited_while_the_model_thinks_keeps_the_edit() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let store = store_with_memories(dir.path());
    let stale_id = store
        .read(|tx| tx.memories(&project(), &[mc_store::MemoryStatus::Active]))
        .unwrap()
        .into_iter()
        .find(|memory| memory.record.content == crate::fixture::STALE_FILE)
        .unwrap()
        .id;
    let db = dir.path().join("context.db");
    let model = FakeModel::new(move |request| {
        let operator = mc_store::Store::open(&db).unwrap();
        let edit = mc_store::MemoryEdit {
            category: None,
            content: Some("Legacy parsing moved to src/net.rs"),
        };
        operator
            .write(|tx| {
                tx.edit_memory(
                    &project(),
                    stale_id,
                    edit,
                    mc_store::MemorySource::Operator,
                    EVENING_MS,
                )
            })
            .unwrap();
        Ok(if is_step(request) {
            json!({"calls": [
                {"tool": "archive_memory", "memory_id": stale_id, "reason": "gone"},
                {"tool": "finish"}
            ]})
        } else {
            json!({"verdicts": []})
        })
    });
    let clock = || EVENING_MS;
    let runner = Runner {
        calls: &NoCalls,
        store: &store,
        model: &model,
        owner: "proxy",
        clock: &clock,
        limits: Limits::default(),
        settings: TaskSettings::default(),
        team: None,
    };
    let run = runner
        .run(Task::VerifyMemories, &project(), Some(dir.path()))
        .unwrap();
    assert_eq!((run.outcome, run.changes), (RunOutcome::Done, 0));
    let kept = store
        .read(|tx| tx.memory(&project(), stale_id))
        .unwrap()
        .unwrap();
    assert_eq!(kept.record.content, "Legacy parsing moved to src/net.rs");
    assert_eq!(kept.record.status, mc_store::MemoryStatus::Active);
}
