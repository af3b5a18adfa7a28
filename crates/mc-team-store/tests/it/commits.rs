//! The commit index shared through the team store: commits one machine stored while the
//! server was down reach the team once it is back, a colleague's machine finds them with its
//! local search after its next sync, a commit both clones hold is stored once, and what came
//! from the team is never sent back.

use std::sync::Arc;

use mc_core::search::fts_query;
use mc_store::{Commit, SearchScope, Store};
use mc_team_store::TeamSync;

use crate::cluster::Cluster;
use crate::support::{NOW_MS, open, project};

fn commit(sha: &str, subject: &str) -> Commit {
    Commit {
        sha: sha.to_owned(),
        author: "Ada".to_owned(),
        committed_ms: NOW_MS,
        subject: subject.to_owned(),
        body: "Signed-off-by: Ada".to_owned(),
    }
}

fn found(store: &Store, text: &str) -> Vec<String> {
    let query = fts_query(text).unwrap();
    store
        .read(|tx| tx.search_commits(&query, &project("p"), &SearchScope::default(), 10))
        .unwrap()
        .into_iter()
        .map(|hit| hit.commit.sha)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_stored_on_one_machine_are_found_on_another_after_the_server_returns() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let team = open(&cluster.url()).await;
    let p = project("p");
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let store_a = Arc::new(Store::open(dir_a.path().join("context.db")).unwrap());
    let store_b = Arc::new(Store::open(dir_b.path().join("context.db")).unwrap());
    let (sync_a, sync_b) = (
        TeamSync::new(Arc::clone(&store_a), team.clone()),
        TeamSync::new(Arc::clone(&store_b), team.clone()),
    );

    cluster.down();
    store_a
        .write(|tx| {
            tx.add_commits(
                &p,
                &[
                    commit("a1", "Parse the card header"),
                    commit("b2", "Retry uploads"),
                ],
            )
        })
        .unwrap();
    let down = sync_a.replay(NOW_MS).await.unwrap();
    assert_eq!(down.commits, 0);
    assert!(sync_a.health().is_down());
    assert_eq!(store_a.read(|tx| tx.team_commit_queue()).unwrap(), 2);

    cluster.up();
    assert_eq!(sync_a.replay(NOW_MS + 10_000).await.unwrap().commits, 2);
    assert_eq!(store_a.read(|tx| tx.team_commit_queue()).unwrap(), 0);
    // B's clone holds b2 too, and a commit of its own.
    store_b
        .write(|tx| {
            tx.add_commits(
                &p,
                &[
                    commit("b2", "Retry uploads"),
                    commit("c3", "Fuzz the parser"),
                ],
            )
        })
        .unwrap();
    assert_eq!(sync_b.replay(NOW_MS + 11_000).await.unwrap().commits, 2);
    let everything = team.changes_since(&p, 0).await.unwrap().commits;
    let mut shas: Vec<&str> = everything.iter().map(|c| c.sha.as_str()).collect();
    shas.sort_unstable();
    assert_eq!(shas, ["a1", "b2", "c3"], "each commit once");

    assert!(found(&store_b, "card header").is_empty());
    sync_b.pull(&p, NOW_MS + 12_000).await.unwrap();
    assert_eq!(found(&store_b, "card header"), ["a1"]);
    sync_a.pull(&p, NOW_MS + 12_000).await.unwrap();
    assert_eq!(found(&store_a, "fuzz parser"), ["c3"]);
    // What came from the team is not sent back.
    assert_eq!(sync_a.replay(NOW_MS + 13_000).await.unwrap().commits, 0);
    assert_eq!(sync_b.replay(NOW_MS + 13_000).await.unwrap().commits, 0);
    assert!(
        team.changes_since(&project("other"), 0)
            .await
            .unwrap()
            .commits
            .is_empty()
    );
}
