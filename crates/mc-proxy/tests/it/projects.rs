//! What the proxy learns from a project's folder, named by the working directory the
//! prompt states: the folder itself (for `status`) and the project's docs (for `m[0]`).

use serde_json::json;

use crate::hostile_bounds::{body, post};
use crate::support::*;

/// The folder a project was identified from is kept with the project, once per folder, so
/// `status` run anywhere names the project by it.
#[tokio::test]
async fn the_folder_a_project_was_seen_in_is_kept() {
    let upstream = Upstream::replying(|_, _| json_response(200, &anthropic_message("ok"))).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().canonicalize().unwrap();
    let system = format!(
        "You are Claude Code.\nPrimary working directory: {}\n",
        folder.display()
    );
    for turn in 0..2 {
        let reply = post(&proxy, &[], &body(&system, &format!("turn {turn}"))).await;
        assert_eq!(reply.status.as_u16(), 200, "{}", reply.text());
    }
    let project = proxy.sessions()[0].project.clone().expect("a project");
    let folders = proxy.store().read(|tx| tx.project_folders()).unwrap();
    assert_eq!(folders.len(), 1, "{folders:?}");
    assert_eq!(folders[&project], folder.display().to_string());
}

/// The project's ARCHITECTURE.md, found from the working directory the prompt states, is in
/// the first request's `m[0]`; an edit to it does not change the next request, which the
/// provider serves from its cache (it reaches `m[0]` at the next hard fold).
#[tokio::test]
async fn the_projects_docs_are_in_m0_and_an_edit_waits_for_a_fold() {
    let upstream = Upstream::replying(|_, _| json_response(200, &anthropic_message("ok"))).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    let doc = dir.path().join("ARCHITECTURE.md");
    std::fs::write(&doc, "# Architecture\nThe store is one SQLite file.").unwrap();
    let system = format!(
        "You are Claude Code.\nPrimary working directory: {}\n",
        dir.path().join("src").display()
    );
    let first = body(&system, "turn 0");
    let reply = post(&proxy, &[], &first).await;
    assert_eq!(reply.status.as_u16(), 200, "{}", reply.text());
    let m0 = |index: usize| upstream.seen()[index].json()["messages"][0].to_string();
    assert!(
        m0(0).contains("<doc name=\\\"ARCHITECTURE.md\\\">"),
        "{}",
        m0(0)
    );
    assert!(m0(0).contains("The store is one SQLite file."), "{}", m0(0));
    std::fs::write(&doc, "# Architecture\nThe store is two files now.").unwrap();
    let mut next = first.clone();
    next["messages"].as_array_mut().unwrap().extend([
        json!({"role": "assistant", "content": "ok"}),
        json!({"role": "user", "content": "turn 1"}),
    ]);
    let reply = post(&proxy, &[], &next).await;
    assert_eq!(reply.status.as_u16(), 200, "{}", reply.text());
    assert_eq!(
        m0(1),
        m0(0),
        "an edited doc does not bust the cache by itself"
    );
}
