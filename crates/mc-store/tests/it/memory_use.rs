//! When a memory was last of use (schema v25): a search's retrievals counted per project,
//! restatements by the agent, the operator or the historian recorded, times never moving
//! backwards, and an import or an archived twin not counting as use.

use mc_core::ProjectId;
use mc_core::head::MemoryCategory;
use mc_store::{MemorySource, MemoryUse, NewMemory, history_scope};

use crate::support::{NOW_MS, TempStore, new_session, sid};

fn project(id: &str) -> ProjectId {
    ProjectId::new(id).unwrap()
}

fn agent(content: &str) -> NewMemory<'_> {
    NewMemory {
        category: MemoryCategory::Naming,
        content,
        source: MemorySource::Agent,
        permanent: false,
    }
}

fn use_of(temp: &TempStore, p: &ProjectId, id: u64) -> MemoryUse {
    temp.store
        .read(|tx| tx.memory_with_use(p, id))
        .unwrap()
        .unwrap()
        .used
}

#[test]
fn retrievals_count_per_project_and_only_move_forwards() {
    let temp = TempStore::new();
    let (mine, theirs) = (project("mine"), project("theirs"));
    let counted = temp
        .store
        .write(|tx| {
            tx.add_memory(&mine, &agent("Tests end in _test."), NOW_MS)?;
            tx.add_memory(&theirs, &agent("Ports are even."), NOW_MS)?;
            let first = tx.record_memory_retrievals(&mine, &[1, 2, 99], NOW_MS + 10)?;
            let late = tx.record_memory_retrievals(&mine, &[1], NOW_MS + 5)?;
            Ok((first, late))
        })
        .unwrap();
    assert_eq!(counted, (1, 1), "another project's memory is not counted");
    assert_eq!(
        use_of(&temp, &mine, 1),
        MemoryUse {
            retrievals: 2,
            last_retrieved_ms: Some(NOW_MS + 10),
            last_restated_ms: None,
            recorded_from_ms: None,
        }
    );
    assert_eq!(use_of(&temp, &theirs, 2), MemoryUse::default());
    let with_use = temp
        .store
        .read(|tx| tx.memories_with_use(&mine, mc_store::MemoryStatus::ALL))
        .unwrap();
    assert_eq!(with_use.len(), 1);
    assert_eq!(with_use[0].last_touched_ms(), NOW_MS + 10);
}

#[test]
fn a_restatement_by_the_agent_or_the_historian_is_recorded() {
    let temp = TempStore::new();
    let p = project("p");
    let session = sid("s1");
    let scope = history_scope(&session, Some(p.as_str()));
    temp.store
        .write(|tx| {
            tx.upsert_session(&new_session("s1"), NOW_MS)?;
            tx.add_memory(&p, &agent("Tests end in _test."), NOW_MS)?;
            tx.add_memory(&p, &agent("tests end in _test"), NOW_MS + 100)?;
            tx.add_memory(&p, &agent("Ports are even."), NOW_MS)?;
            let fact = [(MemoryCategory::Naming, "ports are even".to_owned())];
            tx.store_facts(&scope, &session, &fact, NOW_MS + 300)?;
            tx.promote_historian_facts(&p, NOW_MS + 400)?;
            Ok(())
        })
        .unwrap();
    assert_eq!(use_of(&temp, &p, 1).last_restated_ms, Some(NOW_MS + 100));
    assert_eq!(
        use_of(&temp, &p, 2).last_restated_ms,
        Some(NOW_MS + 300),
        "the historian's sighting, not the promotion, is when it was said"
    );
    let touched = temp
        .store
        .read(|tx| tx.memory_with_use(&p, 2))
        .unwrap()
        .unwrap()
        .last_touched_ms();
    assert_eq!(touched, NOW_MS + 300);
}

#[test]
fn an_import_is_not_a_restatement() {
    let temp = TempStore::new();
    let p = project("p");
    temp.store
        .write(|tx| {
            let added = tx.add_memory(&p, &agent("Tests end in _test."), NOW_MS)?;
            let mut record = tx.memory(&p, added.id())?.unwrap().record;
            record.seen_count = 5;
            tx.import_memory(&p, &record, NOW_MS + 50)?;
            Ok(())
        })
        .unwrap();
    assert_eq!(use_of(&temp, &p, 1), MemoryUse::default());
}
