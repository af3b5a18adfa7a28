//! The dreamer's lease with a team store: a memory-changing task takes its project's lease in
//! PostgreSQL, so a dreamer on another machine (another store file) holding it makes the run
//! skip; it renews the lease while it works and releases it at the end; and a team store that
//! does not answer makes the task skip, saying why, without waiting, while the tasks whose
//! knowledge stays on the machine run under their local lease. The shared half needs
//! `MC_TEST_PG_URL`.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mc_dreamer::{Limits, Runner, Task, TaskSettings, TeamMemories};
use mc_store::{RunOutcome, Store};
use mc_team_store::{TeamStore, TeamStoreUrl, TeamSync, create_scratch_database};
use serde_json::json;

use crate::fixture::{
    EVENING_MS, FakeModel, or_finish, project, store_with_memories, write_project,
};

/// A team store sync over its own handle on `store`'s file, as `serve`'s link has.
pub(crate) fn sync_of(store: &Store, team: TeamStore) -> TeamSync {
    TeamSync::new(Arc::new(Store::open(store.path()).unwrap()), team)
}

pub(crate) fn team_store(runtime: &tokio::runtime::Runtime, url: &str) -> TeamStore {
    let team = TeamStore::new(TeamStoreUrl::parse(url).unwrap()).unwrap();
    runtime.block_on(team.migrate()).unwrap();
    team
}

#[test]
fn a_dreamer_elsewhere_holding_the_team_lease_makes_the_run_skip_until_it_lets_go() {
    let Ok(server) = std::env::var("MC_TEST_PG_URL") else {
        eprintln!(
            "skipped: MC_TEST_PG_URL is not set (eval \"$(.ci/postgres-scratch start)\" sets it)"
        );
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let url = runtime
        .block_on(create_scratch_database(&server))
        .unwrap_or_else(|error| panic!("MC_TEST_PG_URL is set but unusable: {error}"));
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let store = store_with_memories(dir.path());
    // Two machines whose proxies happen to have the same process id.
    let alice = TeamMemories::new(
        sync_of(&store, team_store(&runtime, &url)),
        runtime.handle().clone(),
        "serve-7",
    )
    .unwrap();
    let team = team_store(&runtime, &url);
    let bob = TeamMemories::new(
        sync_of(&store, team.clone()),
        runtime.handle().clone(),
        "serve-7",
    )
    .unwrap();
    assert_ne!(alice.owner(), bob.owner());

    let domain = Task::VerifyMemories.domain(&project());
    let model = FakeModel::new(|request| Ok(or_finish(request, json!({"verdicts": []}))));
    let clock = || EVENING_MS;
    let runner = Runner {
        calls: &crate::fixture::NoCalls,
        store: &store,
        model: &model,
        owner: "serve-7",
        clock: &clock,
        limits: Limits::default(),
        settings: TaskSettings::default(),
        team: Some(&bob),
    };

    // Alice's dreamer is running on the project.
    assert!(
        runtime
            .block_on(team.take_dreamer_lease(&domain, alice.owner(), 60_000))
            .unwrap()
    );
    let skipped = runner
        .run(Task::VerifyMemories, &project(), Some(dir.path()))
        .unwrap();
    assert_eq!(skipped.outcome, RunOutcome::Skipped);
    assert_eq!(
        skipped.detail.as_deref(),
        Some("another dreamer of the team holds memories:git:feedface in the team store")
    );
    assert_eq!(model.calls(), 0);
    assert_eq!(store.read(|tx| tx.dreamer_lease(&domain)).unwrap(), None);

    runtime
        .block_on(team.release_dreamer_lease(&domain, alice.owner()))
        .unwrap();
    let done = runner
        .run(Task::VerifyMemories, &project(), Some(dir.path()))
        .unwrap();
    assert_eq!(done.outcome, RunOutcome::Done, "{done:?}");
    let detail = done.detail.unwrap_or_default();
    assert!(
        detail.starts_with("0 active memories"),
        "the team's memories are read (none yet), not the local table's four: {detail}"
    );
    assert_eq!(
        runtime.block_on(team.dreamer_lease(&domain)).unwrap(),
        None,
        "released in the team store"
    );
}

#[test]
fn an_unreachable_team_store_skips_memory_tasks_at_once_and_says_why() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let url = format!("postgres://team:hunter2-dream@127.0.0.1:{port}/mc");
    let team = TeamStore::new(TeamStoreUrl::parse(&url).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let store = store_with_memories(dir.path());
    let leases =
        TeamMemories::new(sync_of(&store, team), runtime.handle().clone(), "serve-7").unwrap();
    let model = FakeModel::new(|request| Ok(or_finish(request, json!({"verdicts": []}))));
    let clock = || EVENING_MS;
    let runner = Runner {
        calls: &crate::fixture::NoCalls,
        store: &store,
        model: &model,
        owner: "serve-7",
        clock: &clock,
        limits: Limits::default(),
        settings: TaskSettings::default(),
        team: Some(&leases),
    };
    let started = Instant::now();
    let skipped = runner
        .run(Task::ArchiveStaleMemories, &project(), Some(dir.path()))
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(skipped.outcome, RunOutcome::Skipped);
    let detail = skipped.detail.unwrap_or_default();
    assert!(
        detail.starts_with(
            "the team store could not be asked for the lease on memories:git:feedface, so the \
             task does not change the team's memories: the team store at postgres://team:<redacted>@"
        ),
        "{detail}"
    );
    assert!(!detail.contains("hunter2"), "{detail}");
    assert_eq!(skipped.changes, 0);

    // Smart notes are this machine's: their lease stays local and the task runs.
    let notes = runner
        .run(Task::EvaluateSmartNotes, &project(), Some(dir.path()))
        .unwrap();
    assert_eq!(notes.outcome, RunOutcome::Done, "{notes:?}");
}
