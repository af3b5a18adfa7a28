//! `rewrite_verbose_memories` through the runner: the simulated model's shorter texts are
//! written with the task's name in the change log, short memories are not sent, a rewrite
//! that drops an identifier, grows or is empty leaves its memory as it was and the run says
//! why, and a model answering garbage, 529 or nothing changes no memory.

use mc_core::head::MemoryCategory;
use mc_dreamer::{Limits, Runner, Task, TaskSettings};
use mc_sim::server::HistorianMode;
use mc_store::{MemoryAction, MemorySource, MemoryStatus, NewMemory, Store};
use serde_json::json;

use crate::end_to_end::{dream_task, simulator};
use crate::fixture::{EVENING_MS, FakeModel, project};

/// Over the default 400 characters, with filler the simulated model drops.
fn wordy() -> String {
    format!(
        "The retry limit, which is basically MAX_RETRIES = 5, really lives in src/net.rs. {}",
        "The rule is that the client really just retries the call after 30s. ".repeat(5)
    )
}

/// Over 400 characters with no filler to drop.
fn terse_but_long() -> String {
    "Deploys need sign-off from ops. ".repeat(14)
}

const SHORT: &str = "Always run the tests before committing, which is basically the rule.";

/// A store holding [`wordy`], [`terse_but_long`] and [`SHORT`], active, ids 1 to 3.
fn store_with_long_memories(dir: &std::path::Path) -> Store {
    let store = Store::open(dir.join("context.db")).unwrap();
    store
        .write(|tx| {
            for content in [wordy(), terse_but_long(), SHORT.to_owned()] {
                let memory = NewMemory {
                    category: MemoryCategory::ProjectRules,
                    content: &content,
                    source: MemorySource::Historian,
                    permanent: false,
                };
                tx.add_memory(&project(), &memory, EVENING_MS - 86_400_000)?;
            }
            Ok(())
        })
        .unwrap();
    store
}

fn contents(store: &Store) -> Vec<String> {
    store
        .read(|tx| tx.memories(&project(), &[MemoryStatus::Active]))
        .unwrap()
        .into_iter()
        .map(|memory| memory.record.content)
        .collect()
}

fn as_written() -> Vec<String> {
    vec![
        wordy().trim().to_owned(),
        terse_but_long().trim().to_owned(),
        SHORT.to_owned(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulated_model_shortens_a_wordy_memory_and_keeps_its_identifiers() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_long_memories(dir.path());
    let server = simulator(HistorianMode::Honest).await;
    let (store, run) = dream_task(
        &server,
        Task::RewriteVerboseMemories,
        store,
        dir.path().to_owned(),
    )
    .await;
    assert_eq!(run.outcome.as_str(), "done", "{:?}", run.detail);
    assert_eq!((run.model_calls, run.changes), (1, 1), "{:?}", run.detail);
    assert_eq!(
        run.detail.as_deref(),
        Some(
            "3 active memories, 2 over 400 characters, 1 rewritten; \
             left as they were: #2 (no shorter text given)"
        )
    );
    let now = contents(&store);
    assert!(now[0].len() < wordy().len(), "{}", now[0]);
    for kept in ["MAX_RETRIES = 5", "src/net.rs", "30s"] {
        assert!(now[0].contains(kept), "{kept} kept: {}", now[0]);
    }
    assert_eq!(now[1..], as_written()[1..]);

    let log = store.read(|tx| tx.memory_log_since(&project(), 0)).unwrap();
    let dreamt: Vec<_> = log
        .iter()
        .filter(|entry| entry.actor == Some(MemorySource::Dreamer))
        .map(|entry| (entry.action, entry.task.as_deref(), entry.memory_id))
        .collect();
    assert_eq!(
        dreamt,
        [(MemoryAction::Changed, Some("rewrite_verbose_memories"), 1)]
    );
    let detail = log.last().unwrap().detail.clone().unwrap_or_default();
    assert!(
        detail.starts_with(&format!(
            "content: shortened from {} to ",
            wordy().trim().len()
        )),
        "{detail}"
    );
    assert_eq!(server.ledger().len(), 1, "one priced call");
}

#[test]
fn a_rewrite_that_drops_an_identifier_grows_or_is_empty_changes_nothing_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_long_memories(dir.path());
    let third = "Staging deploys also need sign-off from ops, every time. ".repeat(8);
    store
        .write(|tx| {
            let memory = NewMemory {
                category: MemoryCategory::ProjectRules,
                content: &third,
                source: MemorySource::Historian,
                permanent: false,
            };
            tx.add_memory(&project(), &memory, EVENING_MS - 86_400_000)
        })
        .unwrap();
    let model = FakeModel::new(move |request| {
        assert!(request.user.contains("Memory 1 ["), "{}", request.user);
        assert!(
            !request.user.contains("Memory 3 ["),
            "short ones are not sent"
        );
        Ok(json!({"rewrites": [
            {"memory_id": 1, "content": "Retries are capped at 5 in src/net.rs, after 30s."},
            {"memory_id": 2, "content": format!("{} Really.", "Deploys need sign-off from ops. ".repeat(14))},
            {"memory_id": 4, "content": " "}
        ]}))
    });
    let clock = || EVENING_MS;
    let runner = Runner {
        calls: &crate::fixture::NoCalls,
        store: &store,
        model: &model,
        owner: "rewrite-test",
        clock: &clock,
        limits: Limits::default(),
        settings: TaskSettings::default(),
        team: None,
    };
    let run = runner
        .run(Task::RewriteVerboseMemories, &project(), None)
        .unwrap();
    assert_eq!((run.outcome.as_str(), run.changes), ("done", 0));
    assert_eq!(
        run.detail.as_deref(),
        Some(
            "4 active memories, 3 over 400 characters, 0 rewritten; left as they were: \
             #1 (the rewrite drops the name `MAX_RETRIES`), \
             #2 (the rewrite is not shorter (456 characters, not under 447)), \
             #4 (the rewrite is empty)"
        )
    );
    let mut expected = as_written();
    expected.push(third.trim().to_owned());
    assert_eq!(contents(&store), expected);
    assert_eq!(model.calls(), 1);
}

#[test]
fn a_lower_budget_sends_the_shorter_memories_too() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_long_memories(dir.path());
    let model = FakeModel::new(|request| {
        let sent = request.user.matches("\nMemory ").count();
        assert_eq!(sent, 3, "{}", request.user);
        assert!(
            request
                .user
                .starts_with("Project memories longer than their budget of 60 characters:")
        );
        Ok(
            json!({"rewrites": [{"memory_id": 3, "content": "Always run the tests before committing."}]}),
        )
    });
    let clock = || EVENING_MS;
    let runner = Runner {
        calls: &crate::fixture::NoCalls,
        store: &store,
        model: &model,
        owner: "rewrite-test",
        clock: &clock,
        limits: Limits::default(),
        settings: TaskSettings {
            rewrite_over_chars: 60,
            ..TaskSettings::default()
        },
        team: None,
    };
    let run = runner
        .run(Task::RewriteVerboseMemories, &project(), None)
        .unwrap();
    assert_eq!(run.changes, 1, "{:?}", run.detail);
    assert_eq!(
        contents(&store)[2],
        "Always run the tests before committing."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_answering_garbage_overloaded_or_nothing_rewrites_no_memory() {
    for (mode, class) in [
        (HistorianMode::Garbage, "invalid_answer"),
        (HistorianMode::Overloaded, "overloaded"),
        (HistorianMode::Stall, "timeout"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_long_memories(dir.path());
        let server = simulator(mode).await;
        let (store, run) = dream_task(
            &server,
            Task::RewriteVerboseMemories,
            store,
            dir.path().to_owned(),
        )
        .await;
        assert_eq!(
            run.failure_class.as_deref(),
            Some(class),
            "{mode}: {:?}",
            run.detail
        );
        assert_eq!(run.changes, 0, "{mode}");
        assert_eq!(contents(&store), as_written(), "{mode}");
        server.shutdown().await.unwrap();
    }
}
