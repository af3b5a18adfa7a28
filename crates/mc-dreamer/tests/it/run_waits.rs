//! A run already going waits before each model call while its project's session has a call
//! in flight on the same credential: the next call follows that call's end, and a session
//! busy until the run's time runs out ends the run as `session_busy`, which the scheduler
//! defers (no backoff, no step toward stopping the task) and runs once the calls end.
//!
//! A rate limit on any call of the run ends it, and the task backs off as it does when the
//! first call is refused.
//!
//! `verify_memories` on the fixture makes two calls: a batch (the changed value) and an
//! agent-loop step (the gone file). The session call starts during the first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mc_dreamer::{
    BACKOFF_BASE_MS, CallGuard, InFlightCalls, Limits, Runner, SESSION_BUSY, Scheduler,
    TaskSettings,
};
use mc_store::RunOutcome;
use serde_json::json;

use crate::fixture::{
    EVENING_MS, FakeModel, fake_credential, is_step, or_finish, project, provider_error,
    store_with_memories, write_project,
};
use crate::scheduler::{MINUTE, NIGHTLY_MS, verify_only};

/// How long the session's call lasts once it started.
const SESSION_CALL: Duration = Duration::from_millis(500);

/// A model whose first call starts a session call (a guard in `calls`), and which notes
/// when each call was asked.
fn model_starting_a_session_call(
    calls: &Arc<InFlightCalls>,
    held: &Arc<Mutex<Option<CallGuard>>>,
    asked: &Arc<Mutex<Vec<Instant>>>,
) -> FakeModel {
    let (calls, held, asked) = (Arc::clone(calls), Arc::clone(held), Arc::clone(asked));
    let mut started = false;
    FakeModel::new(move |request| {
        asked.lock().unwrap().push(Instant::now());
        if !started {
            started = true;
            *held.lock().unwrap() = Some(calls.begin(&project(), fake_credential()));
        }
        Ok(or_finish(request, json!({"verdicts": []})))
    })
}

#[test]
fn the_next_model_call_follows_the_end_of_a_session_call_that_started_during_the_run() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let store = store_with_memories(dir.path());
    let calls = Arc::new(InFlightCalls::default());
    let held = Arc::new(Mutex::new(None));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let model = model_starting_a_session_call(&calls, &held, &asked);
    let ended = Arc::new(Mutex::new(None));
    let ending = {
        let (held, ended) = (Arc::clone(&held), Arc::clone(&ended));
        std::thread::spawn(move || {
            while held.lock().unwrap().is_none() {
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(SESSION_CALL);
            *ended.lock().unwrap() = Some(Instant::now());
            held.lock().unwrap().take();
        })
    };
    let clock = || EVENING_MS;
    let runner = Runner {
        store: &store,
        model: &model,
        calls: calls.as_ref(),
        owner: "proxy",
        clock: &clock,
        limits: Limits::default(),
        settings: TaskSettings::default(),
        team: None,
    };
    let run = runner
        .run(
            mc_dreamer::Task::VerifyMemories,
            &project(),
            Some(dir.path()),
        )
        .unwrap();
    ending.join().unwrap();

    assert_eq!(
        (run.outcome, run.model_calls),
        (RunOutcome::Done, 2),
        "{run:?}"
    );
    let asked = asked.lock().unwrap().clone();
    let ended = ended.lock().unwrap().unwrap();
    assert_eq!(asked.len(), 2);
    assert!(
        asked[1] >= ended,
        "the second call waited for the session's call to end ({:?} before it)",
        ended.saturating_duration_since(asked[1])
    );
}

#[test]
fn a_session_busy_until_the_runs_time_runs_out_defers_the_run_until_its_calls_end() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let store = store_with_memories(dir.path());
    let calls = Arc::new(InFlightCalls::default());
    let held = Arc::new(Mutex::new(None));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let model = model_starting_a_session_call(&calls, &held, &asked);
    let started = Instant::now();
    let clock = || NIGHTLY_MS + i64::try_from(started.elapsed().as_millis()).unwrap();
    let run_ms = 400;
    let runner = Runner {
        store: &store,
        model: &model,
        calls: calls.as_ref(),
        owner: "proxy",
        clock: &clock,
        limits: Limits {
            run_ms,
            ..Limits::default()
        },
        settings: TaskSettings::default(),
        team: None,
    };
    let folders = HashMap::from([(project(), dir.path().to_string_lossy().into_owned())]);
    let mut scheduler = Scheduler::new(&verify_only(), EVENING_MS).unwrap();

    let first = scheduler.tick(&runner, &folders, NIGHTLY_MS).unwrap();
    assert_eq!(first.len(), 1);
    let run = &first[0];
    assert_eq!(
        (run.outcome, run.failure_class.as_deref(), run.model_calls),
        (RunOutcome::Failed, Some(SESSION_BUSY), 1),
        "asked once, then waited out its time: {run:?}"
    );
    assert!(run.finished_ms - run.started_ms >= run_ms, "{run:?}");
    let detail = run.detail.as_deref().unwrap_or_default();
    assert!(detail.contains("stopped rather than compete"), "{detail}");
    assert!(scheduler.has_deferred(), "the project stays in line");
    assert!(scheduler.stopped().is_empty());
    assert_eq!(
        scheduler.next_due_ms(),
        Some(NIGHTLY_MS),
        "still due: no backoff"
    );
    assert!(
        scheduler
            .tick(&runner, &folders, NIGHTLY_MS + MINUTE)
            .unwrap()
            .is_empty(),
        "not run again while the session's call goes on"
    );

    held.lock().unwrap().take();
    let second = scheduler
        .tick(&runner, &folders, NIGHTLY_MS + 2 * MINUTE)
        .unwrap();
    let outcomes: Vec<RunOutcome> = second.iter().map(|run| run.outcome).collect();
    assert_eq!(outcomes, [RunOutcome::Done], "{second:?}");
    assert!(!scheduler.has_deferred());
    assert_eq!(asked.lock().unwrap().len(), 3, "the second run asks twice");
}

#[test]
fn a_rate_limit_on_a_later_step_ends_the_run_and_backs_the_task_off() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let store = store_with_memories(dir.path());
    let model = FakeModel::new(|request| {
        if is_step(request) {
            return Err(provider_error(429));
        }
        Ok(json!({"verdicts": []}))
    });
    let calls = InFlightCalls::default();
    let clock = || NIGHTLY_MS;
    let runner = Runner {
        store: &store,
        model: &model,
        calls: &calls,
        owner: "proxy",
        clock: &clock,
        limits: Limits::default(),
        settings: TaskSettings::default(),
        team: None,
    };
    let folders = HashMap::from([(project(), dir.path().to_string_lossy().into_owned())]);
    let mut scheduler = Scheduler::new(&verify_only(), EVENING_MS).unwrap();
    let runs = scheduler.tick(&runner, &folders, NIGHTLY_MS).unwrap();
    assert_eq!(
        runs.iter()
            .map(|run| (run.failure_class.as_deref(), run.model_calls))
            .collect::<Vec<_>>(),
        [(Some("rate_limited"), 2)],
        "the batch answered, the step refused, nothing asked after it"
    );
    assert_eq!(model.calls(), 2);
    assert_eq!(scheduler.next_due_ms(), Some(NIGHTLY_MS + BACKOFF_BASE_MS));
}
