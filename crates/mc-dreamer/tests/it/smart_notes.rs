//! `evaluate_smart_notes` on a git project with the simulator as the model: conditions a
//! rule reads (a day, a file, a commit) surface without a call, plain words are judged by the
//! simulated model from the commits since the note, what does not hold stays pending, and a
//! model that fails surfaces no plain-words note.

use std::path::Path;
use std::process::Command;

use mc_dreamer::Task;
use mc_sim::server::HistorianMode;
use mc_store::{NewNote, NoteStatus, Store};

use crate::end_to_end::{dream_task, simulator};
use crate::fixture::{EVENING_MS, project};

pub(crate) const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// Commits `files` (written with their name as content) at `at_ms` with `subject`.
pub(crate) fn commit(root: &Path, at_ms: i64, subject: &str, files: &[&str]) {
    for file in files {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("{file} at {at_ms}\n")).unwrap();
    }
    let date = format!("@{} +0000", at_ms / 1000);
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["-c", "user.name=Dev", "-c", "user.email=dev@example.com"])
            .args(args)
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["add", "-A"]);
    git(&["commit", "-q", "--allow-empty", "-m", subject]);
}

/// The notes, as (condition, whether it is due now).
const NOTES: [(&str, bool); 8] = [
    ("on 2026-12-01", true),
    ("after 2027-01-01", false),
    ("when `src/new_parser.rs` exists", true),
    ("when Cargo.lock changes", true),
    ("when a commit mentions the rollout", true),
    ("when a commit mentions the old API", false),
    ("when the CI config changes", true),
    ("when the tests slow down", false),
];

/// A git project with history before and after the notes, and a store holding the notes
/// (written ten days before the evening) and one session note.
fn project_with_notes(root: &Path) -> Store {
    Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["init", "-q"])
        .status()
        .unwrap();
    let written_ms = EVENING_MS - 10 * DAY_MS;
    commit(
        root,
        written_ms - DAY_MS,
        "Drop the old API",
        &["src/lib.rs"],
    );
    commit(
        root,
        written_ms + DAY_MS,
        "Bump dependencies",
        &["Cargo.lock"],
    );
    commit(
        root,
        written_ms + 2 * DAY_MS,
        "Finish the rollout",
        &["src/new_parser.rs"],
    );
    commit(
        root,
        written_ms + 3 * DAY_MS,
        "Move CI config to actions",
        &[".github/ci.yml"],
    );
    let store = Store::open(root.join("context.db")).unwrap();
    store
        .write(|tx| {
            for (condition, _) in NOTES {
                let note = NewNote {
                    project: Some(&project()),
                    session: None,
                    content: &format!("remember: {condition}"),
                    surface_condition: Some(condition),
                };
                tx.add_note(&note, written_ms)?;
            }
            Ok(())
        })
        .unwrap();
    store
}

fn statuses(store: &Store) -> Vec<NoteStatus> {
    let owner = mc_store::NoteOwner {
        session: None,
        project: Some(&project()),
    };
    store
        .read(|tx| tx.notes(owner))
        .unwrap()
        .into_iter()
        .map(|note| note.status)
        .collect()
}

fn due_now() -> Vec<NoteStatus> {
    NOTES
        .iter()
        .map(|(_, due)| match due {
            true => NoteStatus::Active,
            false => NoteStatus::Pending,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn due_notes_surface_by_rule_or_by_the_simulated_model_and_the_rest_wait() {
    let dir = tempfile::tempdir().unwrap();
    let store = project_with_notes(dir.path());
    let server = simulator(HistorianMode::Honest).await;
    let (store, run) = dream_task(
        &server,
        Task::EvaluateSmartNotes,
        store,
        dir.path().to_owned(),
    )
    .await;
    assert_eq!(run.outcome.as_str(), "done", "{:?}", run.detail);
    assert_eq!((run.changes, run.model_calls), (5, 1), "{:?}", run.detail);
    assert_eq!(statuses(&store), due_now());
    assert_eq!(
        run.detail.as_deref(),
        Some(
            "8 pending smart notes: 4 due by rule [#1 (it is 2026-12-05 now), \
             #3 (`src/new_parser.rs` exists), #4 (commit \"Bump dependencies\" touched \
             `Cargo.lock`), #5 (commit \"Finish the rollout\" mentions \"the rollout\")], \
             2 not yet; 2 in plain words, 1 found due by the model"
        )
    );
    assert_eq!(server.ledger().len(), 1, "one priced call");

    let (store, again) = dream_task(
        &server,
        Task::EvaluateSmartNotes,
        store,
        dir.path().to_owned(),
    )
    .await;
    assert_eq!((again.outcome.as_str(), again.changes), ("done", 0));
    assert_eq!(statuses(&store), due_now());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_model_surfaces_no_plain_words_note() {
    for (mode, class) in [
        (HistorianMode::Garbage, "invalid_answer"),
        (HistorianMode::Overloaded, "overloaded"),
        (HistorianMode::Stall, "timeout"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let store = project_with_notes(dir.path());
        let server = simulator(mode).await;
        let (store, run) = dream_task(
            &server,
            Task::EvaluateSmartNotes,
            store,
            dir.path().to_owned(),
        )
        .await;
        assert_eq!(run.failure_class.as_deref(), Some(class), "{mode}");
        let plain_ci = 6;
        assert_eq!(
            statuses(&store)[plain_ci],
            NoteStatus::Pending,
            "{mode}: the model's failure surfaces nothing"
        );
        assert_eq!(run.changes, 4, "{mode}: the rules still hold");
        server.shutdown().await.unwrap();
    }
}
