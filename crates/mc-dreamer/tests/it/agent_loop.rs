//! The agent loop against the simulator over HTTP: honest, it finds a renamed file through
//! `git log` and updates the memory; scripted, it shows the caps (steps, tokens, time) end
//! a run with the decisions made so far, and that paths out of the project, links out of
//! it and files over the size cap are refused with errors the model reads.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use mc_core::ProjectId;
use mc_dreamer::{DreamerModel, Limits, LlmJudge, Runner, Task, TaskSettings};
use mc_llm::{
    LlmClient, LlmError, ModelEndpoint, RetryPolicy, StructuredAnswer, StructuredRequest, Wire,
};
use mc_sim::server::SimServer;
use mc_store::{DreamerRun, MemoryAction, MemorySource, MemoryStatus, Store};
use serde_json::{Value, json};

use crate::end_to_end::{bind, sim_config};
use crate::fixture::{
    CHANGED_VALUE, EVENING_MS, FakeModel, PLAIN_RULE, STALE_FILE, TRUE_MEMORY, is_step, memories,
    project, provider_error, store_with_memories, untouched, write_project,
};

/// The simulator, answering the loop's steps with `steps` first, then honestly.
pub(crate) async fn scripted(steps: Vec<Value>) -> SimServer {
    bind(sim_config().with_dreamer_steps(steps)).await
}

/// A model asking the simulator, keeping each step's user message.
struct Recording {
    judge: LlmJudge,
    steps: Mutex<Vec<String>>,
}

impl DreamerModel for Recording {
    fn ask(
        &self,
        project: &ProjectId,
        request: &StructuredRequest,
    ) -> Result<StructuredAnswer, LlmError> {
        if is_step(request) {
            self.steps.lock().unwrap().push(request.user.clone());
        }
        self.judge.ask(project, request)
    }

    fn first_model(&self, project: &ProjectId) -> Option<String> {
        self.judge.first_model(project)
    }
}

/// How a run is bounded, and how far its clock moves at each reading.
#[derive(Clone, Copy, Default)]
pub(crate) struct Bounds {
    pub settings: TaskSettings,
    pub limits: Limits,
    pub tick_ms: i64,
}

/// One run of `task` asking `server`; the run and every step's message.
pub(crate) async fn run_task(
    server: &SimServer,
    task: Task,
    store: Store,
    root: PathBuf,
    bounds: Bounds,
) -> (Store, DreamerRun, Vec<String>) {
    let policy = RetryPolicy {
        max_attempts: 1,
        attempt_timeout: Duration::from_secs(5),
        ..RetryPolicy::default()
    };
    let endpoint = ModelEndpoint::new(
        Wire::Anthropic,
        format!("http://{}", server.local_addr()),
        "claude-haiku-4-5",
        None,
    );
    let model = Recording {
        judge: LlmJudge::new(
            LlmClient::new(policy).unwrap(),
            vec![endpoint],
            tokio::runtime::Handle::current(),
        ),
        steps: Mutex::new(Vec::new()),
    };
    tokio::task::spawn_blocking(move || {
        let now = AtomicI64::new(EVENING_MS);
        let clock = || now.fetch_add(bounds.tick_ms, Ordering::SeqCst);
        let runner = Runner {
            calls: &crate::fixture::NoCalls,
            store: &store,
            model: &model,
            owner: "loop",
            clock: &clock,
            limits: bounds.limits,
            settings: bounds.settings,
            team: None,
        };
        let run = runner.run(task, &project(), Some(&root)).unwrap();
        let steps = model.steps.into_inner().unwrap();
        (store, run, steps)
    })
    .await
    .unwrap()
}

/// Runs git in `root` as a fixed author.
pub(crate) fn git(root: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["-c", "user.name=Dev", "-c", "user.email=dev@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(status.status.success(), "git {args:?}: {status:?}");
}

/// The fixture project with `src/old_parser.rs`, committed, then renamed and committed.
fn project_with_a_rename(root: &Path) {
    write_project(root);
    std::fs::write(root.join("src/old_parser.rs"), "pub fn parse_legacy() {}\n").unwrap();
    git(root, &["init", "-q"]);
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "Start the shop"]);
    std::fs::create_dir_all(root.join("src/parsing")).unwrap();
    git(root, &["mv", "src/old_parser.rs", "src/parsing/legacy.rs"]);
    git(root, &["commit", "-qm", "Move the legacy parser"]);
}

fn stale_id(store: &Store) -> u64 {
    store
        .read(|tx| tx.memories(&project(), &[MemoryStatus::Active]))
        .unwrap()
        .into_iter()
        .find(|memory| memory.record.content == STALE_FILE)
        .unwrap()
        .id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renamed_file_is_found_in_its_history_and_the_memory_follows_it() {
    let (code, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    project_with_a_rename(code.path());
    let store = store_with_memories(data.path());
    let server = scripted(Vec::new()).await;
    let (store, run, steps) = run_task(
        &server,
        Task::VerifyMemories,
        store,
        code.path().to_owned(),
        Bounds::default(),
    )
    .await;

    assert_eq!(run.outcome.as_str(), "done", "{:?}", run.detail);
    assert_eq!((run.model_calls, run.changes), (3, 2), "{:?}", run.detail);
    assert_eq!(
        run.detail.as_deref(),
        Some(
            "4 active memories, 2 candidates from 4 files (1 naming a gone file, 1 looked at in the code, the loop finished), 2 changed"
        )
    );
    assert_eq!(steps.len(), 2, "the history, then the verdict");
    assert!(
        steps[1].contains("| R100\tsrc/old_parser.rs\tsrc/parsing/legacy.rs"),
        "{}",
        steps[1]
    );
    assert_eq!(
        memories(&store),
        [
            (TRUE_MEMORY.to_owned(), MemoryStatus::Active),
            (
                "Legacy parsing lives in src/parsing/legacy.rs".to_owned(),
                MemoryStatus::Active
            ),
            (
                "The default port is DEFAULT_PORT = 4141".to_owned(),
                MemoryStatus::Active
            ),
            (PLAIN_RULE.to_owned(), MemoryStatus::Active),
        ]
    );
    let log = store.read(|tx| tx.memory_log_since(&project(), 0)).unwrap();
    let followed = log
        .iter()
        .find(|entry| {
            entry.actor == Some(MemorySource::Dreamer)
                && entry
                    .detail
                    .as_deref()
                    .is_some_and(|d| d.contains("renamed"))
        })
        .unwrap();
    assert_eq!(followed.action, MemoryAction::Changed);
    assert_eq!(followed.task.as_deref(), Some("verify_memories"));
    assert_eq!(
        followed.detail.as_deref(),
        Some("content: `src/old_parser.rs` was renamed to `src/parsing/legacy.rs`")
    );
    assert!(CHANGED_VALUE.contains("8080"));
}

/// Asserts the run's detail says `what`.
fn said(run: &DreamerRun, what: &str) {
    let detail = run.detail.as_deref().unwrap_or_default();
    assert!(detail.contains(what), "{detail}");
}

/// A scripted step that lists the files and archives nothing.
fn look_around() -> Value {
    json!({"calls": [{"tool": "search", "pattern": ".", "path": "src"}, {"tool": "list_files"}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_step_cap_ends_the_loop_keeping_the_verdicts_already_given() {
    let (code, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_project(code.path());
    let store = store_with_memories(data.path());
    let id = stale_id(&store);
    let mut steps = vec![json!({"calls": [
        {"tool": "archive_memory", "memory_id": id, "reason": "no parser file any more"},
        {"tool": "list_files"}
    ]})];
    steps.extend(std::iter::repeat_n(look_around(), 19));
    let server = scripted(steps).await;
    let mut bounds = Bounds::default();
    bounds.settings.agent_max_steps = 3;
    let (store, run, asked) = run_task(
        &server,
        Task::VerifyMemories,
        store,
        code.path().to_owned(),
        bounds,
    )
    .await;

    assert_eq!(run.outcome.as_str(), "done", "{:?}", run.detail);
    assert_eq!(asked.len(), 3);
    assert_eq!(run.model_calls, 1 + 3, "one judging call, three steps");
    said(&run, "the loop stopped at the step cap (3 steps)");
    assert!(asked[2].contains("Left: 1 steps"), "{}", asked[2]);
    let stale = memories(&store).remove(1);
    assert_eq!(stale, (STALE_FILE.to_owned(), MemoryStatus::Archived));
}

/// A verify run over the fixture whose loop only looks around, within `bounds`.
async fn looking_around(bounds: Bounds) -> (Store, DreamerRun, Vec<String>) {
    let (code, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_project(code.path());
    let store = store_with_memories(data.path());
    let server = scripted(vec![look_around(); 20]).await;
    run_task(
        &server,
        Task::VerifyMemories,
        store,
        code.path().to_owned(),
        bounds,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_budget_ends_the_loop() {
    let mut bounds = Bounds::default();
    bounds.settings.agent_token_budget = 2_000;
    let (store, run, asked) = looking_around(bounds).await;

    said(&run, "the loop stopped at the token budget (2000 tokens)");
    assert!(
        (1..20).contains(&asked.len()),
        "{} steps before the budget ran out",
        asked.len()
    );
    assert_eq!(memories(&store).remove(1).1, MemoryStatus::Active);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_time_cap_ends_the_loop() {
    let mut bounds = Bounds::default();
    bounds.settings.agent_max_seconds = 10;
    bounds.tick_ms = 3_000;
    let (_store, run, asked) = looking_around(bounds).await;

    said(&run, "the loop stopped at the time cap (10 s)");
    assert!(
        (1..=3).contains(&asked.len()),
        "three seconds a reading leave room for a few steps in ten, not {}",
        asked.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_out_of_the_project_links_out_and_oversize_files_are_refused_in_words() {
    let (code, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = code.path().join("shop");
    write_project(&root);
    std::fs::write(code.path().join("secret.txt"), "SECRET-TOKEN-42\n").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(code.path().join("secret.txt"), root.join("src/link.rs")).unwrap();
    std::fs::write(root.join("big.log"), "x".repeat(5_000)).unwrap();
    let store = store_with_memories(data.path());
    let server = scripted(vec![
        json!({"calls": [
            {"tool": "read_file", "path": "../secret.txt", "start_line": 1, "end_line": 5},
            {"tool": "read_file", "path": "src/link.rs", "start_line": 1, "end_line": 5},
            {"tool": "read_file", "path": "big.log", "start_line": 1, "end_line": 5},
            {"tool": "git_log", "path": "/etc/passwd"},
            {"tool": "search", "pattern": "SECRET", "path": "../"},
            {"tool": "read_file", "path": "src/net.rs", "start_line": 1, "end_line": 1}
        ]}),
        json!({"calls": [{"tool": "finish", "reason": "done looking"}]}),
    ])
    .await;
    let mut bounds = Bounds::default();
    bounds.limits.max_file_bytes = 1_000;
    let (store, run, asked) = run_task(&server, Task::VerifyMemories, store, root, bounds).await;

    assert_eq!(run.outcome.as_str(), "done", "{:?}", run.detail);
    assert_eq!(asked.len(), 2);
    let results: Vec<&str> = asked[1]
        .lines()
        .filter(|line| line.starts_with("| "))
        .collect();
    assert_eq!(
        results,
        [
            "| error: `../secret.txt` is outside the project folder; only files inside it can be read",
            "| error: `src/link.rs` is outside the project folder; only files inside it can be read",
            "| error: `big.log` is 5000 bytes, over the 1000-byte cap on files the dreamer reads",
            "| error: `/etc/passwd` is outside the project folder; only files inside it can be read",
            "| error: `../` is outside the project folder; only files inside it can be read",
            "| src/net.rs, 3 lines",
            "| 1: pub const MAX_RETRIES: u32 = 7;",
        ]
    );
    assert!(!asked.iter().any(|message| message.contains("SECRET-TOKEN")));
    assert_eq!(memories(&store).remove(1).1, MemoryStatus::Active);
}

#[test]
fn a_model_failing_mid_loop_changes_nothing_it_decided() {
    let (code, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_project(code.path());
    let store = store_with_memories(data.path());
    let id = stale_id(&store);
    let mut steps = 0;
    let model = FakeModel::new(move |request| {
        if !is_step(request) {
            return Ok(json!({"verdicts": []}));
        }
        steps += 1;
        if steps == 1 {
            Ok(json!({"calls": [
                {"tool": "archive_memory", "memory_id": id, "reason": "gone"},
                {"tool": "list_files"}
            ]}))
        } else {
            Err(provider_error(529))
        }
    });
    let clock = || EVENING_MS;
    let runner = Runner {
        calls: &crate::fixture::NoCalls,
        store: &store,
        model: &model,
        owner: "loop",
        clock: &clock,
        limits: Limits::default(),
        settings: TaskSettings::default(),
        team: None,
    };
    let run = runner
        .run(Task::VerifyMemories, &project(), Some(code.path()))
        .unwrap();
    assert_eq!(run.outcome.as_str(), "failed");
    assert_eq!(run.failure_class.as_deref(), Some("overloaded"));
    assert_eq!((run.model_calls, run.changes), (3, 0));
    assert_eq!(memories(&store), untouched());
}
