//! `maintain_docs` driven by a scripted model through the simulator: a doc whose proposed
//! text differs becomes a patch under the data directory and the project is left as it
//! was; the same text is no proposal (and clears an older one); a doc not shown cannot be
//! proposed; a project with neither doc costs no call while its last month is quiet, and
//! once it is busy may be proposed a first ARCHITECTURE.md, as a patch creating the file.

use std::path::Path;

use mc_dreamer::{NEW_DOC_OPENING, Task, proposals_dir, read_proposals};
use serde_json::json;

use crate::agent_loop::{Bounds, git, run_task, scripted};
use crate::fixture::{EVENING_MS, project, store_with_memories, write_project};
use crate::smart_notes::{DAY_MS, commit};

const ARCHITECTURE: &str =
    "# Architecture\n\nParsing lives in src/old_parser.rs.\nNetworking lives in src/net.rs.\n";

/// One `maintain_docs` run on the project at `root`.
async fn docs_run(
    server: &mc_sim::server::SimServer,
    store: mc_store::Store,
    root: &Path,
) -> (mc_store::Store, mc_store::DreamerRun, Vec<String>) {
    run_task(
        server,
        Task::MaintainDocs,
        store,
        root.to_owned(),
        Bounds::default(),
    )
    .await
}

fn project_with_docs(root: &Path) {
    write_project(root);
    std::fs::write(root.join("ARCHITECTURE.md"), ARCHITECTURE).unwrap();
}

fn propose(content: &str) -> Vec<serde_json::Value> {
    vec![
        json!({"calls": [
            {"tool": "read_file", "path": "ARCHITECTURE.md", "start_line": 1, "end_line": 10},
            {"tool": "list_files", "path": "src"}
        ]}),
        json!({"calls": [
            {"tool": "propose_doc", "path": "ARCHITECTURE.md", "content": content,
             "reason": "the parser file is gone"},
            {"tool": "propose_doc", "path": "STRUCTURE.md", "content": "# Structure\n",
             "reason": "there is none"},
            {"tool": "finish"}
        ]}),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_differing_doc_becomes_a_patch_under_the_data_directory_only() {
    let (code, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    project_with_docs(code.path());
    let store = store_with_memories(data.path());
    let updated = "# Architecture\n\nNetworking lives in src/net.rs.\n";
    let server = scripted(propose(updated)).await;
    let (_store, run, asked) = docs_run(&server, store, code.path()).await;

    assert_eq!(run.outcome.as_str(), "done", "{:?}", run.detail);
    assert_eq!((run.model_calls, run.changes), (2, 1), "{:?}", run.detail);
    let patch_path = proposals_dir(data.path(), &project()).join("ARCHITECTURE.md.patch");
    assert_eq!(
        run.detail.as_deref(),
        Some(
            format!(
                "1 of 2 docs checked, the loop finished; ARCHITECTURE.md: proposed at {}",
                patch_path.display()
            )
            .as_str()
        )
    );
    assert!(asked[0].starts_with(
        "Project docs to keep current, as they are now:\n\n=== ARCHITECTURE.md ===\n# Architecture"
    ));
    assert_eq!(
        std::fs::read_to_string(code.path().join("ARCHITECTURE.md")).unwrap(),
        ARCHITECTURE,
        "the project is never written"
    );
    assert!(!code.path().join("STRUCTURE.md").exists());
    let proposals = read_proposals(data.path(), None).unwrap();
    assert_eq!(proposals.len(), 1);
    assert_eq!(proposals[0].doc, "ARCHITECTURE.md");
    assert_eq!(proposals[0].path, patch_path);
    let diff: Vec<&str> = proposals[0]
        .text
        .lines()
        .filter(|line| !line.starts_with('#'))
        .collect();
    assert_eq!(
        diff,
        [
            "--- a/ARCHITECTURE.md",
            "+++ b/ARCHITECTURE.md",
            "@@ -1,4 +1,3 @@",
            " # Architecture",
            " ",
            "-Parsing lives in src/old_parser.rs.",
            " Networking lives in src/net.rs.",
        ]
    );
    assert!(proposals[0].text.contains("# the parser file is gone\n"));
    let applied = std::process::Command::new("git")
        .arg("apply")
        .arg("--check")
        .arg(&patch_path)
        .current_dir(code.path())
        .output()
        .unwrap();
    assert!(applied.status.success(), "{applied:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_text_is_no_proposal_and_clears_an_older_one() {
    let (code, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    project_with_docs(code.path());
    let store = store_with_memories(data.path());
    let older = proposals_dir(data.path(), &project()).join("ARCHITECTURE.md.patch");
    std::fs::create_dir_all(older.parent().unwrap()).unwrap();
    std::fs::write(&older, "an older proposal").unwrap();
    let server = scripted(propose(ARCHITECTURE)).await;
    let (_store, run, _) = docs_run(&server, store, code.path()).await;

    assert_eq!((run.model_calls, run.changes), (2, 0), "{:?}", run.detail);
    assert_eq!(
        run.detail.as_deref(),
        Some("1 of 2 docs checked, the loop finished; ARCHITECTURE.md: current")
    );
    assert!(!older.exists());
    assert!(read_proposals(data.path(), None).unwrap().is_empty());
}

const QUIET: &str = "the project has no ARCHITECTURE.md or STRUCTURE.md and its last month is \
     quiet (0 commits; one is proposed from 10 commits touching 20 files); nothing to maintain";

/// The fixture project as a git repository whose last month has `commits` commits, the
/// newest a day before the run, each touching the files `files(n)` names.
fn committed_project(root: &Path, commits: i64, files: impl Fn(i64) -> Vec<String>) {
    write_project(root);
    git(root, &["init", "-q"]);
    for n in (1..=commits).rev() {
        let files = files(n);
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        commit(
            root,
            EVENING_MS - n * DAY_MS,
            &format!("Work on part {n}"),
            &files,
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_project_without_docs_is_proposed_a_first_architecture_md_creating_the_file() {
    let (code, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    committed_project(code.path(), 10, |n| {
        ["mod.rs", "store.rs", "http.rs"]
            .map(|file| format!("src/part{n}/{file}"))
            .to_vec()
    });
    let store = store_with_memories(data.path());
    let first = "# Architecture\n\nTen parts under src/, each a store and an HTTP face.\n";
    let server = scripted(propose(first)).await;
    let (_store, run, asked) = docs_run(&server, store, code.path()).await;

    assert_eq!(run.outcome.as_str(), "done", "{:?}", run.detail);
    assert_eq!((run.model_calls, run.changes), (2, 1), "{:?}", run.detail);
    let patch_path = proposals_dir(data.path(), &project()).join("ARCHITECTURE.md.patch");
    assert_eq!(
        run.detail.as_deref(),
        Some(
            format!(
                "no docs, 10 commits this month, the loop finished; ARCHITECTURE.md: proposed at {}",
                patch_path.display()
            )
            .as_str()
        )
    );
    let opening = format!(
        "{NEW_DOC_OPENING}\nIn the last 30 days: 10 commits touching 33 files.\n\n\
         Newest commits (subject, files):\n- Work on part 1 (src/part1/http.rs, src/part1/mod.rs, src/part1/store.rs)\n"
    );
    assert!(asked[0].starts_with(&opening), "{}", asked[0]);
    assert!(
        !code.path().join("ARCHITECTURE.md").exists(),
        "the project is never written"
    );
    assert!(!code.path().join("STRUCTURE.md").exists(), "not offered");
    let proposals = read_proposals(data.path(), None).unwrap();
    assert_eq!(proposals.len(), 1);
    let diff: Vec<&str> = proposals[0]
        .text
        .lines()
        .filter(|line| !line.starts_with('#'))
        .collect();
    assert_eq!(
        diff,
        [
            "--- /dev/null",
            "+++ b/ARCHITECTURE.md",
            "@@ -0,0 +1,3 @@",
            "+# Architecture",
            "+",
            "+Ten parts under src/, each a store and an HTTP face.",
        ]
    );
    // Applied by the user, as `dream --show-proposals` says: the file appears.
    git(code.path(), &["apply", &patch_path.to_string_lossy()]);
    assert_eq!(
        std::fs::read_to_string(code.path().join("ARCHITECTURE.md")).unwrap(),
        first
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_commits_to_few_files_start_no_doc() {
    let (code, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    committed_project(code.path(), 12, |_| vec!["src/net.rs".to_owned()]);
    let store = store_with_memories(data.path());
    let server = scripted(propose("# Architecture\n")).await;
    let (_store, run, _) = docs_run(&server, store, code.path()).await;
    assert_eq!(run.model_calls, 0);
    assert_eq!(
        run.detail.as_deref(),
        Some(
            "the project has no ARCHITECTURE.md or STRUCTURE.md and its last month is quiet \
             (12 commits; one is proposed from 10 commits touching 20 files); nothing to maintain"
        )
    );
    assert!(read_proposals(data.path(), None).unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_without_docs_costs_no_call_and_the_honest_model_proposes_nothing() {
    let (code, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_project(code.path());
    let store = store_with_memories(data.path());
    let server = scripted(Vec::new()).await;
    let (store, run, _) = docs_run(&server, store, code.path()).await;
    assert_eq!(run.outcome.as_str(), "done");
    assert_eq!(run.model_calls, 0);
    assert_eq!(run.detail.as_deref(), Some(QUIET));

    std::fs::write(
        code.path().join("STRUCTURE.md"),
        "# Structure\n\nsrc/: code\n",
    )
    .unwrap();
    let (_store, run, _) = docs_run(&server, store, code.path()).await;
    assert_eq!((run.model_calls, run.changes), (1, 0), "{:?}", run.detail);
    assert_eq!(
        run.detail.as_deref(),
        Some("1 of 2 docs checked, the loop finished; no proposal")
    );
}
