//! The dreamer against the simulator as its model, over HTTP through `mc-llm`: a stale
//! memory is archived with the task's name in the log, a changed value is updated, true
//! memories stay; a simulator answering garbage, 529 or nothing changes no memory.

use std::time::Duration;

use mc_core::head::MemoryCategory;
use mc_dreamer::{Limits, LlmJudge, Runner, Task, TaskSettings};
use mc_llm::{LlmClient, ModelEndpoint, RetryPolicy, Wire};
use mc_sim::clock::SimClock;
use mc_sim::script::Script;
use mc_sim::server::{HistorianMode, Responder, SimConfig, SimServer};
use mc_store::{DreamerRun, MemoryAction, MemorySource, MemoryStatus, NewMemory, Store};
use serde_json::json;

use crate::fixture::{
    CHANGED_VALUE, EVENING_MS, PLAIN_RULE, STALE_FILE, TRUE_MEMORY, memories, project,
    store_with_memories, untouched, write_project,
};

pub(crate) async fn simulator(mode: HistorianMode) -> SimServer {
    bind(sim_config().with_dreamer(mode)).await
}

/// The simulator's settings for the dreamer's tests: a script for any other call, a fixed
/// clock.
pub(crate) fn sim_config() -> SimConfig {
    let script = json!([{ "content": [{ "type": "text", "text": "Scripted answer." }] }]);
    let script = Script::parse(&script.to_string(), "dreamer test").unwrap();
    SimConfig::new(Responder::Script(script)).with_clock(SimClock::new(1_700_000_000_000))
}

/// The simulator with `config`, on a free port.
pub(crate) async fn bind(config: SimConfig) -> SimServer {
    SimServer::bind("127.0.0.1:0".parse().unwrap(), config)
        .await
        .unwrap()
}

/// One run of `task` on a blocking thread, asking `server` with short timeouts.
pub(crate) async fn dream_task(
    server: &SimServer,
    task: Task,
    store: Store,
    root: std::path::PathBuf,
) -> (Store, DreamerRun) {
    let policy = RetryPolicy {
        max_attempts: 2,
        attempt_timeout: Duration::from_millis(800),
        base_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(2),
        max_retry_after: Duration::from_millis(2),
    };
    let endpoint = ModelEndpoint::new(
        Wire::Anthropic,
        format!("http://{}", server.local_addr()),
        "claude-haiku-4-5",
        None,
    );
    let judge = LlmJudge::new(
        LlmClient::new(policy).unwrap(),
        vec![endpoint],
        tokio::runtime::Handle::current(),
    );
    tokio::task::spawn_blocking(move || {
        let clock = || EVENING_MS;
        let runner = Runner {
            calls: &crate::fixture::NoCalls,
            store: &store,
            model: &judge,
            owner: "e2e",
            clock: &clock,
            limits: Limits::default(),
            settings: TaskSettings::default(),
            team: None,
        };
        let run = runner.run(task, &project(), Some(&root)).unwrap();
        (store, run)
    })
    .await
    .unwrap()
}

/// One verify run.
async fn dream(server: &SimServer, store: Store, root: std::path::PathBuf) -> (Store, DreamerRun) {
    dream_task(server, Task::VerifyMemories, store, root).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restatements_are_merged_and_different_values_stay_apart() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let store = store_with_memories(dir.path());
    let extra = [
        "Crate names start with mc-.",
        "All crates are named with the mc- prefix.",
        "Retries are capped by MAX_RETRIES = 5 in src/net.rs",
    ];
    store
        .write(|tx| {
            for content in extra {
                let memory = NewMemory {
                    category: MemoryCategory::Naming,
                    content,
                    source: MemorySource::Historian,
                    permanent: false,
                };
                tx.add_memory(&project(), &memory, EVENING_MS)?;
            }
            Ok(())
        })
        .unwrap();
    let server = simulator(HistorianMode::Honest).await;
    let (store, run) = dream_task(
        &server,
        Task::ConsolidateMemories,
        store,
        dir.path().to_owned(),
    )
    .await;
    assert_eq!(run.outcome.as_str(), "done", "{:?}", run.detail);
    assert_eq!((run.model_calls, run.changes), (1, 2), "{:?}", run.detail);
    let live: Vec<String> = memories(&store)
        .into_iter()
        .filter(|(_, status)| *status == MemoryStatus::Active)
        .map(|(content, _)| content)
        .collect();
    assert_eq!(
        live,
        [
            TRUE_MEMORY,
            STALE_FILE,
            CHANGED_VALUE,
            PLAIN_RULE,
            "All crates are named with the mc- prefix.",
            "Retries are capped by MAX_RETRIES = 5 in src/net.rs",
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_memory_is_archived_and_a_changed_value_updated_by_the_simulated_model() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let store = store_with_memories(dir.path());
    let server = simulator(HistorianMode::Honest).await;
    let (store, run) = dream(&server, store, dir.path().to_owned()).await;

    assert_eq!(run.outcome.as_str(), "done", "{:?}", run.detail);
    // One call judges the changed value; the gone file goes to the agent loop, which asks
    // for its history (this folder is no repository) and then archives it: two steps.
    assert_eq!((run.model_calls, run.changes), (3, 2), "{:?}", run.detail);
    assert!(
        run.input_tokens > 0 && run.output_tokens > 0 && run.cost_usd > 0.0,
        "{run:?}"
    );
    assert_eq!(
        memories(&store),
        [
            (TRUE_MEMORY.to_owned(), MemoryStatus::Active),
            (STALE_FILE.to_owned(), MemoryStatus::Archived),
            (
                "The default port is DEFAULT_PORT = 4141".to_owned(),
                MemoryStatus::Active
            ),
            (PLAIN_RULE.to_owned(), MemoryStatus::Active),
        ]
    );
    let log = store.read(|tx| tx.memory_log_since(&project(), 0)).unwrap();
    let dreamt: Vec<_> = log
        .iter()
        .filter(|entry| entry.actor == Some(MemorySource::Dreamer))
        .map(|entry| {
            (
                entry.action,
                entry.task.as_deref(),
                entry.detail.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        dreamt,
        [
            (
                MemoryAction::Changed,
                Some("verify_memories"),
                "content: `DEFAULT_PORT` is 4141 in the code now, not 8080".to_owned()
            ),
            (
                MemoryAction::Archived,
                Some("verify_memories"),
                "`src/old_parser.rs` is gone from the project".to_owned()
            ),
        ]
    );
    assert_eq!(server.ledger().len(), 3, "every call priced");
    assert!(CHANGED_VALUE.contains("8080"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_simulator_answering_garbage_overloaded_or_nothing_changes_no_memory() {
    for (mode, class) in [
        (HistorianMode::Garbage, "invalid_answer"),
        (HistorianMode::Overloaded, "overloaded"),
        (HistorianMode::Stall, "timeout"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        write_project(dir.path());
        let store = store_with_memories(dir.path());
        let server = simulator(mode).await;
        let (store, run) = dream(&server, store, dir.path().to_owned()).await;
        assert_eq!(
            run.failure_class.as_deref(),
            Some(class),
            "{mode}: {:?}",
            run.detail
        );
        assert_eq!(memories(&store), untouched(), "{mode}");
        server.shutdown().await.unwrap();
    }
}
