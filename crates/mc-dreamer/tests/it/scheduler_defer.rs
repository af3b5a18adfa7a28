//! The scheduler holds a project's run back while a call of that project is in flight on
//! the credential the run would use, and runs it once the call has ended; a project whose
//! calls use another credential runs on time.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use mc_core::ProjectId;
use mc_dreamer::{CredentialId, InFlight, Limits, Runner, Scheduler, TaskSettings};
use mc_store::RunOutcome;
use serde_json::json;

use crate::fixture::{
    EVENING_MS, FakeModel, fake_credential, memories, or_finish, project, store_with_memories,
    untouched, write_project,
};
use crate::scheduler::{MINUTE, NIGHTLY_MS, verify_only};

/// The calls a test says are in flight.
#[derive(Default)]
struct Calls(Mutex<HashSet<(ProjectId, CredentialId)>>);

impl Calls {
    fn set(&self, calls: &[(ProjectId, CredentialId)]) {
        *self.0.lock().unwrap() = calls.iter().cloned().collect();
    }
}

impl InFlight for Calls {
    fn is_calling(&self, project: &ProjectId, credential: &CredentialId) -> bool {
        self.0
            .lock()
            .unwrap()
            .contains(&(project.clone(), *credential))
    }

    /// A test's calls never end while a run waits: the run waits out its time.
    fn wait_free(&self, project: &ProjectId, credential: &CredentialId, _: Duration) -> bool {
        !self.is_calling(project, credential)
    }
}

#[test]
fn a_run_waits_for_its_projects_call_on_the_same_credential_and_then_runs() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let store = store_with_memories(dir.path());
    let other_dir = tempfile::tempdir().unwrap();
    let other = ProjectId::new("git:cafe").unwrap();
    let folders = HashMap::from([
        (project(), dir.path().to_string_lossy().into_owned()),
        (
            other.clone(),
            other_dir.path().to_string_lossy().into_owned(),
        ),
    ]);
    let model = FakeModel::new(|request| Ok(or_finish(request, json!({"verdicts": []}))));
    let now = std::cell::Cell::new(EVENING_MS);
    let clock = || now.get();
    let calls = Calls::default();
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
    let mut scheduler = Scheduler::new(&verify_only(), EVENING_MS).unwrap();
    let elsewhere = CredentialId::of(&mc_llm::ModelEndpoint::new(
        mc_llm::Wire::Anthropic,
        "http://fake",
        "claude-haiku-4-5",
        Some(mc_core::Secret::new("sk-another")),
    ));
    calls.set(&[(project(), fake_credential()), (other.clone(), elsewhere)]);
    let tick = |scheduler: &mut Scheduler, at: i64| {
        now.set(at);
        scheduler.tick(&runner, &folders, at).unwrap()
    };

    let first = tick(&mut scheduler, NIGHTLY_MS);
    let ran: Vec<(&str, RunOutcome)> = first
        .iter()
        .map(|run| (run.project.as_str(), run.outcome))
        .collect();
    assert_eq!(
        ran,
        [("git:cafe", RunOutcome::Done)],
        "the other project's call uses another key"
    );
    assert_eq!(model.calls(), 0, "nothing asked about the deferred project");
    assert_eq!(memories(&store), untouched());
    assert!(scheduler.has_deferred());
    assert!(
        tick(&mut scheduler, NIGHTLY_MS + MINUTE).is_empty(),
        "its call goes on"
    );

    calls.set(&[]);
    let second = tick(&mut scheduler, NIGHTLY_MS + 2 * MINUTE);
    let ran: Vec<(&str, RunOutcome)> = second
        .iter()
        .map(|run| (run.project.as_str(), run.outcome))
        .collect();
    assert_eq!(
        ran,
        [("git:feedface", RunOutcome::Done)],
        "deferred, not dropped"
    );
    assert!(model.calls() > 0);
    assert!(!scheduler.has_deferred());
    assert!(
        tick(&mut scheduler, NIGHTLY_MS + 3 * MINUTE).is_empty(),
        "the sweep is over"
    );
    assert_eq!(
        scheduler.next_due_ms(),
        Some(NIGHTLY_MS + 24 * 60 * MINUTE),
        "until tomorrow night"
    );
}
