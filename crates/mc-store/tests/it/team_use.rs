//! This machine's use of a team's memories: recorded beside the cache, summed into one open
//! row per memory bound for the team store, sealed into batches that travel under one write
//! id, and merged with the team's use as the sync brings it, times only moving forwards.

use mc_core::ProjectId;
use mc_core::head::MemoryCategory;
use mc_store::{
    MemoryRecord, MemorySource, MemoryStatus, StoredMemory, TeamUse, TeamUseBatch, UsedMemory,
};

use crate::support::{NOW_MS, TempStore};

fn project() -> ProjectId {
    ProjectId::new("team-p").unwrap()
}

fn cached(id: u64) -> (StoredMemory, u64) {
    let memory = StoredMemory {
        id,
        record: MemoryRecord {
            category: MemoryCategory::Constraints,
            content: format!("Fact number {id}."),
            status: MemoryStatus::Active,
            source: MemorySource::Agent,
            seen_count: 1,
            created_ms: NOW_MS,
            updated_ms: NOW_MS,
        },
        superseded_by: None,
    };
    (memory, id)
}

fn with_use(temp: &TempStore) -> Vec<(u64, u64, Option<i64>, Option<i64>)> {
    temp.store
        .read(|tx| tx.team_memories_with_use(&project(), &[MemoryStatus::Active]))
        .unwrap()
        .iter()
        .map(|UsedMemory { memory, used }| {
            (
                memory.id,
                used.retrievals,
                used.last_retrieved_ms,
                used.last_restated_ms,
            )
        })
        .collect()
}

#[test]
fn use_is_summed_per_memory_sealed_into_batches_and_forgotten_once_sent() {
    let temp = TempStore::new();
    let p = project();
    temp.store
        .write(|tx| tx.cache_team_changes(&p, &[cached(1), cached(2)], &[], 2, NOW_MS))
        .unwrap();
    let counted = temp
        .store
        .write(|tx| {
            let first = tx.record_team_memory_retrievals(&p, &[1, 2, 99], NOW_MS + 10)?;
            let late = tx.record_team_memory_retrievals(&p, &[1], NOW_MS + 5)?;
            let restated = tx.note_team_restated(&p, 2, NOW_MS + 20)?;
            let stale = tx.note_team_restated(&p, 2, NOW_MS + 1)?;
            Ok((first, late, restated, stale))
        })
        .unwrap();
    assert_eq!(
        counted,
        (2, 1, true, false),
        "an id the cache lacks is not counted; an older restatement is no news"
    );
    assert_eq!(
        with_use(&temp),
        [
            (1, 2, Some(NOW_MS + 10), None),
            (2, 1, Some(NOW_MS + 10), Some(NOW_MS + 20))
        ]
    );
    assert_eq!(temp.store.read(|tx| tx.team_use_queue()).unwrap(), 2);

    let seal = |write_id: &str| {
        temp.store
            .write(|tx| {
                let open = tx.team_use_to_seal()?;
                let sealed: Vec<_> = open.into_iter().map(|p| (p, write_id.to_owned())).collect();
                tx.seal_team_use(&sealed)
            })
            .unwrap();
    };
    seal("w1");
    // Use after the seal opens a row of its own: the sealed batch travels unchanged.
    temp.store
        .write(|tx| tx.record_team_memory_retrievals(&p, &[1], NOW_MS + 30))
        .unwrap();
    let first_batch = TeamUseBatch {
        write_id: "w1".to_owned(),
        project: p.clone(),
        uses: vec![
            TeamUse {
                id: 1,
                retrievals: 2,
                last_retrieved_ms: Some(NOW_MS + 10),
                last_restated_ms: None,
            },
            TeamUse {
                id: 2,
                retrievals: 1,
                last_retrieved_ms: Some(NOW_MS + 10),
                last_restated_ms: Some(NOW_MS + 20),
            },
        ],
    };
    assert_eq!(
        temp.store.read(|tx| tx.sealed_team_use()).unwrap(),
        std::slice::from_ref(&first_batch)
    );
    seal("w2");
    let batches = temp.store.read(|tx| tx.sealed_team_use()).unwrap();
    assert_eq!(batches.len(), 2);
    assert_eq!(batches[0], first_batch, "the oldest batch first");
    assert_eq!(batches[1].write_id, "w2");
    temp.store.write(|tx| tx.forget_team_use("w1")).unwrap();
    assert_eq!(temp.store.read(|tx| tx.team_use_queue()).unwrap(), 1);
    // Survives a reopen: the queue is durable.
    let path = temp.path();
    drop(temp.store);
    let store = mc_store::Store::open(&path).unwrap();
    let left = store.read(|tx| tx.sealed_team_use()).unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].uses[0].last_retrieved_ms, Some(NOW_MS + 30));
}

#[test]
fn the_teams_use_merges_into_this_machines_and_never_moves_a_time_back() {
    let temp = TempStore::new();
    let p = project();
    temp.store
        .write(|tx| {
            tx.cache_team_changes(&p, &[cached(1), cached(2)], &[], 2, NOW_MS)?;
            tx.record_team_memory_retrievals(&p, &[1], NOW_MS + 50)
        })
        .unwrap();
    let team = [
        TeamUse {
            id: 1,
            retrievals: 7,
            last_retrieved_ms: Some(NOW_MS + 40),
            last_restated_ms: Some(NOW_MS + 60),
        },
        TeamUse {
            id: 2,
            retrievals: 0,
            last_retrieved_ms: None,
            last_restated_ms: Some(NOW_MS + 70),
        },
    ];
    for _ in 0..2 {
        temp.store.write(|tx| tx.cache_team_use(&p, &team)).unwrap();
    }
    assert_eq!(
        with_use(&temp),
        [
            (1, 7, Some(NOW_MS + 50), Some(NOW_MS + 60)),
            (2, 0, None, Some(NOW_MS + 70))
        ]
    );
    // The team's use is not this machine's to send again.
    assert_eq!(temp.store.read(|tx| tx.team_use_queue()).unwrap(), 1);
}
