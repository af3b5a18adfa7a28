//! The team store's local side: the cache answers through the same `ProjectKnowledge` trait
//! as the local tables, copying the same changes twice changes nothing, and queued writes
//! survive a reopen in the order they were made.

use mc_core::ProjectId;
use mc_core::head::MemoryCategory;
use mc_core::search::fts_query;
use mc_store::{
    Maintenance, MaintenanceKind, MemoryAction, MemoryLogEntry, MemoryRecord, MemorySource,
    MemoryStatus, ProjectKnowledge, SearchScope, Store, StoredMemory, TeamCache, TeamWrite,
};

use crate::support::{NOW_MS, TempStore};

fn project(id: &str) -> ProjectId {
    ProjectId::new(id).unwrap()
}

fn memory(id: u64, content: &str, status: MemoryStatus) -> StoredMemory {
    StoredMemory {
        id,
        record: MemoryRecord {
            category: MemoryCategory::Constraints,
            content: content.to_owned(),
            status,
            source: MemorySource::Agent,
            seen_count: 1,
            created_ms: NOW_MS,
            updated_ms: NOW_MS,
        },
        superseded_by: None,
    }
}

fn entry(version: u64, memory_id: u64, action: MemoryAction) -> MemoryLogEntry {
    MemoryLogEntry {
        id: version,
        memory_id,
        action,
        at_ms: NOW_MS,
        detail: None,
        actor: Some(MemorySource::Agent),
        task: None,
    }
}

#[test]
fn the_cache_reads_like_the_local_tables_and_applies_changes_once() {
    let temp = TempStore::new();
    let p = project("team-p");
    let first = vec![(
        memory(7, "Never call the network in tests.", MemoryStatus::Active),
        3,
    )];
    let log = vec![entry(3, 7, MemoryAction::Added)];
    for _ in 0..2 {
        temp.store
            .write(|tx| tx.cache_team_changes(&p, &first, &log, 3, NOW_MS))
            .unwrap();
    }
    let archived = vec![(
        memory(
            7,
            "Never call the network in tests.",
            MemoryStatus::Archived,
        ),
        9,
    )];
    let stale = vec![(
        memory(7, "an older row arriving late", MemoryStatus::Active),
        2,
    )];
    temp.store
        .write(|tx| {
            tx.cache_team_changes(
                &p,
                &archived,
                &[entry(9, 7, MemoryAction::Archived)],
                9,
                NOW_MS,
            )?;
            tx.cache_team_changes(&p, &stale, &[], 2, NOW_MS)
        })
        .unwrap();

    temp.store
        .read(|tx| {
            let cache: &dyn ProjectKnowledge = &TeamCache::new(tx);
            assert_eq!(cache.memory_log_head(&p)?, 9);
            assert_eq!(tx.team_cursor(&p)?, Some((9, NOW_MS)));
            let actions: Vec<_> = cache
                .memory_log_since(&p, 0)?
                .iter()
                .map(|entry| (entry.id, entry.action))
                .collect();
            assert_eq!(
                actions,
                [(3, MemoryAction::Added), (9, MemoryAction::Archived)]
            );
            assert_eq!(cache.memory_log_since(&p, 3)?.len(), 1);
            let stored = cache.memory(&p, 7)?.unwrap();
            assert_eq!(stored.record.status, MemoryStatus::Archived);
            assert_eq!(stored.record.content, "Never call the network in tests.");
            assert!(cache.memory(&project("other"), 7)?.is_none());
            assert!(cache.memories(&p, &[MemoryStatus::Active])?.is_empty());
            Ok(())
        })
        .unwrap();
}

#[test]
fn the_cache_is_searched_by_full_text() {
    let temp = TempStore::new();
    let p = project("team-p");
    let rows = vec![
        (
            memory(
                1,
                "The billing service retries webhooks.",
                MemoryStatus::Active,
            ),
            1,
        ),
        (
            memory(
                2,
                "Tests run against a scratch cluster.",
                MemoryStatus::Active,
            ),
            2,
        ),
    ];
    temp.store
        .write(|tx| tx.cache_team_changes(&p, &rows, &[], 2, NOW_MS))
        .unwrap();
    let query = fts_query("webhooks").unwrap();
    let hits = temp
        .store
        .read(|tx| TeamCache::new(tx).search_memories(&query, &p, &SearchScope::default(), 10))
        .unwrap();
    assert_eq!(hits.iter().map(|hit| hit.id).collect::<Vec<_>>(), [1]);
}

/// A dreamer task's change of the memories in `seen`.
fn maintain(change: MaintenanceKind, seen: &[(u64, &str)]) -> TeamWrite {
    TeamWrite::Maintain(Maintenance {
        change,
        seen: seen
            .iter()
            .map(|(id, text)| (*id, (*text).to_owned()))
            .collect(),
        task: "verify_memories".to_owned(),
        reason: "the file moved".to_owned(),
    })
}

#[test]
fn maintenance_write_ids_tell_apart_what_differs_and_only_that() {
    let p = project("team-p");
    let archive = |text: &str| match maintain(MaintenanceKind::Archive, &[(7, text)]) {
        TeamWrite::Maintain(maintenance) => maintenance,
        other => panic!("not a maintenance write: {other:?}"),
    };
    let id = archive("a").write_id(&p, NOW_MS);
    assert_eq!(id, archive("a").write_id(&p, NOW_MS), "the same decision");
    assert!(id.starts_with("dreamer-"), "{id}");
    assert_ne!(id, archive("b").write_id(&p, NOW_MS), "another text read");
    assert_ne!(
        id,
        archive("a").write_id(&p, NOW_MS + 1),
        "decided again later"
    );
    assert_ne!(id, archive("a").write_id(&project("team-q"), NOW_MS));
}

#[test]
fn queued_writes_survive_a_reopen_in_order_and_queue_once() {
    let temp = TempStore::new();
    let p = project("team-p");
    let writes = [
        TeamWrite::Add {
            category: MemoryCategory::Naming,
            content: "Handlers end in _handler.".to_owned(),
            source: MemorySource::Agent,
            permanent: true,
        },
        TeamWrite::Edit {
            id: 4,
            category: None,
            content: Some("new wording".to_owned()),
            actor: MemorySource::Operator,
        },
        TeamWrite::Archive {
            id: 5,
            actor: MemorySource::Agent,
        },
        TeamWrite::Supersede {
            old: 6,
            by: 4,
            actor: MemorySource::Dreamer,
        },
        maintain(
            MaintenanceKind::Archive,
            &[(7, "Parsing lives in src/old.rs")],
        ),
        maintain(
            MaintenanceKind::Rewrite {
                content: "Port: 4141".to_owned(),
            },
            &[(8, "The port is \"8080\", see [config]")],
        ),
        maintain(
            MaintenanceKind::Merge {
                content: "Tests run with nextest.".to_owned(),
            },
            &[(9, "Use nextest."), (10, "Run tests with cargo nextest.")],
        ),
    ];
    temp.store
        .write(|tx| {
            for (n, write) in writes.iter().enumerate() {
                tx.queue_team_write(&format!("w{n}"), &p, write, NOW_MS + n as i64)?;
            }
            tx.queue_team_write("w0", &p, &writes[0], NOW_MS + 99)
        })
        .unwrap();
    let reopened = Store::open(temp.path()).unwrap();
    let queued = reopened.read(|tx| tx.queued_team_writes(10)).unwrap();
    assert_eq!(
        queued.iter().map(|q| q.write.clone()).collect::<Vec<_>>(),
        writes
    );
    assert_eq!(queued[0].write_id, "w0");
    assert_eq!(queued[0].queued_ms, NOW_MS);
    assert_eq!(
        reopened.read(|tx| tx.team_queue()).unwrap(),
        (7, Some(NOW_MS))
    );
    reopened
        .write(|tx| {
            tx.note_team_write_failure("w1", "unreachable")?;
            tx.forget_team_write("w0")
        })
        .unwrap();
    let left = reopened.read(|tx| tx.queued_team_writes(10)).unwrap();
    assert_eq!(left.len(), 6);
    assert_eq!((left[0].write_id.as_str(), left[0].attempts), ("w1", 1));
}

#[test]
fn historian_facts_queue_for_the_team_unless_the_cache_states_or_retired_them() {
    let temp = TempStore::new();
    let p = project("team-p");
    let session = mc_core::SessionId::new("s").unwrap();
    let facts = vec![
        (MemoryCategory::Naming, "Tests end in _test.".to_owned()),
        (
            MemoryCategory::Constraints,
            "Never call the network in tests".to_owned(),
        ),
        (MemoryCategory::ConfigValues, "The port is 8080.".to_owned()),
    ];
    let cached = vec![
        (
            memory(4, "never call the network in tests.", MemoryStatus::Active),
            1,
        ),
        (memory(5, "The port is 8080", MemoryStatus::Archived), 2),
    ];
    let queued = temp
        .store
        .write(|tx| {
            tx.store_facts(
                &mc_store::history_scope(&session, Some(p.as_str())),
                &session,
                &facts,
                NOW_MS,
            )?;
            tx.cache_team_changes(&p, &cached, &[], 2, NOW_MS)?;
            let first = tx.queue_historian_facts_for_team(&p, NOW_MS)?;
            // Promoted again before the write was sent: the same write id, queued once.
            let again = tx.queue_historian_facts_for_team(&p, NOW_MS + 10)?;
            Ok((first, again))
        })
        .unwrap();
    assert_eq!(queued, (1, 1));
    let outbox = temp.store.read(|tx| tx.queued_team_writes(10)).unwrap();
    let written: Vec<_> = outbox
        .iter()
        .map(|queued| (queued.write_id.clone(), queued.write.clone()))
        .collect();
    assert_eq!(
        written,
        [(
            mc_store::historian_write_id(&p, "tests end in _test"),
            TeamWrite::Add {
                category: MemoryCategory::Naming,
                content: "Tests end in _test.".to_owned(),
                source: MemorySource::Historian,
                permanent: false,
            }
        )]
    );
    // The fact memory 4 states counts as restated when the historian last saw it, here and
    // in the use bound for the team store; queuing again is no news.
    let used = temp
        .store
        .read(|tx| tx.team_memories_with_use(&p, &[MemoryStatus::Active]))
        .unwrap();
    assert_eq!(used.len(), 1);
    assert_eq!(used[0].used.last_restated_ms, Some(NOW_MS));
    assert_eq!(temp.store.read(|tx| tx.team_use_queue()).unwrap(), 1);
    // Nothing reached the local table: the team's memories are the project's.
    assert!(
        temp.store
            .read(|tx| tx.memories(&p, &[MemoryStatus::Active]))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_project_known_only_by_a_queued_change_is_one_the_cache_keeps() {
    let temp = TempStore::new();
    let (cached, written, noted) = (project("cached"), project("written"), project("noted"));
    temp.store
        .write(|tx| {
            tx.cache_team_changes(&cached, &[], &[], 0, NOW_MS)?;
            tx.queue_team_write(
                "w-1",
                &written,
                &TeamWrite::Archive {
                    id: 1,
                    actor: MemorySource::Operator,
                },
                NOW_MS,
            )?;
            let session = mc_core::SessionId::new("s").unwrap();
            let note = tx.add_note(
                &mc_store::NewNote {
                    project: Some(&noted),
                    session: Some(&session),
                    content: "Check the quotas.",
                    surface_condition: Some("when the plan changes"),
                },
                NOW_MS,
            )?;
            tx.share_note_with_team(&noted, note, "origin-n", NOW_MS)?;
            Ok(())
        })
        .unwrap();
    assert_eq!(
        temp.store.read(|tx| tx.knowledge_projects()).unwrap(),
        [cached, noted, written]
    );
}
