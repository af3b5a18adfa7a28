//! The failure rule: with the server stopped, writes keep returning at once (queued durably),
//! the cache keeps answering, and after a restart every queued write lands exactly once,
//! even one whose first sending reached the server but whose answer was lost; a search made
//! meanwhile waits with them and is counted after the restart.

use std::sync::Arc;
use std::time::Instant;

use mc_store::{MemoryStatus, ProjectKnowledge, Store, TeamCache};
use mc_team_store::{CONNECT_TIMEOUT, TeamSync, Written};

use crate::cluster::Cluster;
use crate::support::{NOW_MS, add, open, project};

const OFFLINE_WRITES: i64 = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_made_while_the_server_is_down_land_once_after_it_returns() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let team = open(&cluster.url()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path().join("context.db")).unwrap());
    let sync = TeamSync::new(Arc::clone(&store), team.clone());
    let p = project("p");

    let online = sync.write(&p, add("Online fact."), NOW_MS).await.unwrap();
    assert!(matches!(online, Written::Landed(_)), "{online:?}");
    assert_eq!(sync.pull(&p, NOW_MS).await.unwrap(), 1);

    cluster.down();
    let mut slowest = std::time::Duration::ZERO;
    for n in 0..OFFLINE_WRITES {
        let started = Instant::now();
        let written = sync
            .write(&p, add(&format!("Offline fact {n}.")), NOW_MS + 1_000 + n)
            .await
            .unwrap();
        slowest = slowest.max(started.elapsed());
        assert!(matches!(written, Written::Queued(_)), "{written:?}");
    }
    assert!(
        slowest < CONNECT_TIMEOUT,
        "a write waited {slowest:?} on a stopped server"
    );
    let pulled = sync.pull(&p, NOW_MS + 2_000).await.unwrap_err();
    assert!(pulled.is_retryable(), "{pulled}");
    assert!(!pulled.to_string().contains("not-a-secret"), "{pulled}");
    assert!(sync.health().is_down());
    let cached = store
        .read(|tx| TeamCache::new(tx).memories(&p, &[MemoryStatus::Active]))
        .unwrap();
    assert_eq!(cached.len(), 1, "the cache still answers");
    // A search meanwhile is recorded here and waits with the writes.
    let searched = store
        .write(|tx| tx.record_team_memory_retrievals(&p, &[cached[0].id], NOW_MS + 2_500))
        .unwrap();
    assert_eq!(searched, 1);
    let down = sync.replay(NOW_MS + 3_000).await.unwrap();
    assert_eq!((down.left, down.use_batches), (OFFLINE_WRITES as u64, 0));
    assert_eq!(store.read(|tx| tx.team_use_queue()).unwrap(), 1);
    assert_eq!(
        store.read(|tx| tx.team_queue()).unwrap().0,
        OFFLINE_WRITES as u64
    );

    cluster.up();
    // The first queued write reaches the server but its answer is lost: replay must not
    // store it twice.
    let first = store.read(|tx| tx.queued_team_writes(1)).unwrap().remove(0);
    team.apply(
        &first.write_id,
        &first.project,
        &first.write,
        NOW_MS + 5_000,
    )
    .await
    .unwrap();
    let replayed = sync.replay(NOW_MS + 10_000).await.unwrap();
    assert_eq!(
        (
            replayed.landed,
            replayed.refused.len(),
            replayed.left,
            replayed.use_batches
        ),
        (OFFLINE_WRITES as u64, 0, 0, 1)
    );
    assert_eq!(store.read(|tx| tx.team_queue()).unwrap().0, 0);
    assert_eq!(store.read(|tx| tx.team_use_queue()).unwrap(), 0);
    let on_server = team.memories(&p, &[MemoryStatus::Active]).await.unwrap();
    assert_eq!(
        on_server.len(),
        OFFLINE_WRITES as usize + 1,
        "nothing lost, nothing twice"
    );
    assert!(on_server.iter().all(|memory| memory.record.seen_count == 1));
    assert_eq!(
        sync.pull(&p, NOW_MS + 11_000).await.unwrap(),
        OFFLINE_WRITES as usize
    );
    assert!(!sync.health().is_down());
    let cached = store
        .read(|tx| TeamCache::new(tx).memories(&p, &[MemoryStatus::Active]))
        .unwrap();
    assert_eq!(cached, on_server);
}
