//! The historian of a proxy whose project knowledge lives in a team store: the facts it
//! promotes take the team's write path (queued durably with the run, sent by the sync, applied
//! once by write id), never the local table, and they reach the other proxy. Two stores stand
//! for two proxies on one scratch PostgreSQL database. Needs `MC_TEST_PG_URL`; without it the
//! test says it skipped.

use std::sync::Arc;

use mc_core::{Host, ProjectId, SessionId};
use mc_historian::{HistorianSettings, next_job, publish, run_job};
use mc_store::{
    KnowledgeSource, MemorySource, MemoryStatus, NewSession, ProjectKnowledge, Store, TeamCache,
};
use mc_team_store::{TeamStore, TeamStoreUrl, TeamSync, create_scratch_database, round};
use serde_json::json;

use crate::runs::{NOW, Scripted, compartment, conversation, count, grow, seeded, settings};

/// One proxy's side: its store, its session in the project, and its team store sync.
struct Proxy {
    _dir: tempfile::TempDir,
    store: Store,
    session: SessionId,
    sync: TeamSync,
}

impl Proxy {
    async fn new(url: &str, project: &ProjectId, messages: &[mc_core::Message]) -> Self {
        let (dir, store, session) = seeded(messages);
        store
            .write(|tx| {
                tx.upsert_session(
                    &NewSession {
                        id: session.clone(),
                        host: Host::ClaudeCode,
                        project: Some(project.clone()),
                    },
                    NOW,
                )
            })
            .unwrap();
        let team = TeamStore::new(TeamStoreUrl::parse(url).unwrap()).unwrap();
        team.migrate().await.unwrap();
        let link_store = Store::open(dir.path().join("context.db")).unwrap();
        let sync = TeamSync::new(Arc::new(link_store), team);
        Self {
            _dir: dir,
            store,
            session,
            sync,
        }
    }

    /// Runs and publishes the session's next job, the model stating `facts`; returns the
    /// job's prompt.
    async fn summarise(&self, settings: &HistorianSettings, facts: &[&str]) -> String {
        let job = next_job(&self.store, &self.session, settings, 0, &count)
            .unwrap()
            .expect("eligible history");
        let facts: Vec<_> = facts
            .iter()
            .map(|fact| json!({"category": "CONSTRAINTS", "content": fact}))
            .collect();
        let end = job.chunk.end;
        let model = Scripted::new(
            1,
            vec![Ok(json!({
                "compartments": [compartment(job.chunk.start, job.chunk.start + 4), compartment(job.chunk.start + 5, end)],
                "facts": facts,
            }))],
        );
        let report = run_job(&job, &model, 2).await;
        publish(&self.store, &job, &report, NOW, NOW + 5).unwrap();
        job.request.user
    }

    fn queued(&self) -> u64 {
        self.store.read(|tx| tx.team_queue()).unwrap().0
    }

    fn cached(&self, project: &ProjectId) -> Vec<String> {
        self.store
            .read(|tx| TeamCache::new(tx).memories(project, MemoryStatus::ALL))
            .unwrap()
            .into_iter()
            .map(|memory| memory.record.content)
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn promoted_facts_go_through_the_team_store_once_and_reach_the_other_proxy() {
    let Ok(server) = std::env::var("MC_TEST_PG_URL") else {
        eprintln!(
            "skipped: MC_TEST_PG_URL is not set (eval \"$(.ci/postgres-scratch start)\" sets it)"
        );
        return;
    };
    let url = create_scratch_database(&server)
        .await
        .unwrap_or_else(|error| panic!("MC_TEST_PG_URL is set but unusable: {error}"));
    let project = ProjectId::new("git:team").unwrap();
    let messages = conversation(12, 2_000);
    let alice = Proxy::new(&url, &project, &messages).await;
    let bob = Proxy::new(&url, &project, &messages).await;
    let team = settings().with_knowledge(KnowledgeSource::TeamCache);

    alice.summarise(&team, &["Never edit the lockfile."]).await;
    // Queued with the run; nothing in the local table the team's proxies do not read.
    assert_eq!(alice.queued(), 1);
    let local = alice
        .store
        .read(|tx| tx.memories(&project, MemoryStatus::ALL))
        .unwrap();
    assert!(local.is_empty(), "{local:?}");

    // Bob's historian learns the same fact before his cache has Alice's: it lands once.
    bob.summarise(&team, &["Never edit the lockfile", "Tests run offline."])
        .await;
    assert_eq!(bob.queued(), 2);
    for proxy in [&alice, &bob, &alice] {
        round(&proxy.sync, &|| NOW + 1_000).await;
        assert_eq!(proxy.queued(), 0);
    }
    let on_server: Vec<(String, MemorySource, u64)> = alice
        .sync
        .team()
        .memories(&project, MemoryStatus::ALL)
        .await
        .unwrap()
        .into_iter()
        .map(|memory| {
            let record = memory.record;
            (record.content, record.source, record.seen_count)
        })
        .collect();
    assert_eq!(
        on_server,
        [
            (
                "Never edit the lockfile.".to_owned(),
                MemorySource::Historian,
                1
            ),
            ("Tests run offline.".to_owned(), MemorySource::Historian, 1),
        ]
    );
    assert_eq!(alice.cached(&project), bob.cached(&project));

    // Bob's next run reads the team's memories as the story so far, and promotes nothing
    // the team already states.
    let longer = conversation(20, 2_000);
    grow(&bob.store, &bob.session, &longer, messages.len());
    let prompt = bob.summarise(&team, &["Tests run offline."]).await;
    assert!(prompt.contains("Never edit the lockfile."), "{prompt}");
    assert_eq!(bob.queued(), 0);
}
