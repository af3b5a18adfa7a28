//! Project memory: merged by normalised key, every change logged in its own transaction,
//! never visible from another project, superseded with lineage, promoted from the
//! historian's facts.

use mc_core::ProjectId;
use mc_core::head::MemoryCategory;
use mc_store::{
    Added, MemoryAction, MemoryEdit, MemoryLogEntry, MemoryRecord, MemorySource, MemoryStatus,
    NewMemory, StoreError, StoredMemory, history_scope,
};

use crate::support::{NOW_MS, TempStore, new_session, sid};

fn project(id: &str) -> ProjectId {
    ProjectId::new(id).unwrap()
}

fn operator(category: MemoryCategory, content: &str) -> NewMemory<'_> {
    NewMemory {
        category,
        content,
        source: MemorySource::Operator,
        permanent: false,
    }
}

const LIVE: &[MemoryStatus] = &[MemoryStatus::Active, MemoryStatus::Permanent];

fn log_actions(entries: &[MemoryLogEntry]) -> Vec<(u64, MemoryAction, Option<&str>)> {
    entries
        .iter()
        .map(|entry| (entry.memory_id, entry.action, entry.detail.as_deref()))
        .collect()
}

#[test]
fn a_restatement_merges_into_the_live_memory_and_is_not_logged() {
    let temp = TempStore::new();
    let p = project("p1");
    let (first, again) = temp
        .store
        .write(|tx| {
            let first = tx.add_memory(
                &p,
                &operator(MemoryCategory::Naming, "  Tests end in _test. "),
                NOW_MS,
            )?;
            let again = tx.add_memory(
                &p,
                &operator(MemoryCategory::Constraints, "tests END in\n_test"),
                NOW_MS + 1,
            )?;
            Ok((first, again))
        })
        .unwrap();
    assert_eq!(first, Added::New(1));
    assert_eq!(again, Added::Merged(1));
    let (memories, log) = temp
        .store
        .read(|tx| Ok((tx.memories(&p, LIVE)?, tx.memory_log_since(&p, 0)?)))
        .unwrap();
    assert_eq!(
        memories,
        [StoredMemory {
            id: 1,
            record: MemoryRecord {
                category: MemoryCategory::Naming,
                content: "Tests end in _test.".into(),
                status: MemoryStatus::Active,
                source: MemorySource::Operator,
                seen_count: 2,
                created_ms: NOW_MS,
                updated_ms: NOW_MS,
            },
            superseded_by: None,
        }]
    );
    assert_eq!(
        log_actions(&log),
        [(1, MemoryAction::Added, Some("operator"))]
    );
}

#[test]
fn each_mutation_logs_one_row_and_a_failed_transaction_logs_none() {
    let temp = TempStore::new();
    let p = project("p1");
    temp.store
        .write(|tx| {
            tx.add_memory(
                &p,
                &operator(MemoryCategory::ConfigValues, "Port 8080"),
                NOW_MS,
            )?;
            tx.edit_memory(
                &p,
                1,
                MemoryEdit {
                    category: Some(MemoryCategory::Constraints),
                    content: Some("Port 9090"),
                },
                MemorySource::Operator,
                NOW_MS + 1,
            )?;
            // An edit that changes nothing is no change.
            tx.edit_memory(
                &p,
                1,
                MemoryEdit::default(),
                MemorySource::Operator,
                NOW_MS + 2,
            )?;
            tx.archive_memory(&p, 1, MemorySource::Operator, NOW_MS + 3)
        })
        .unwrap();
    // The add lands in a transaction that then fails: neither row nor log row remains.
    let err = temp
        .store
        .write(|tx| {
            tx.add_memory(
                &p,
                &operator(MemoryCategory::Naming, "Crates are mc-*"),
                NOW_MS,
            )?;
            tx.archive_memory(&p, 99, MemorySource::Operator, NOW_MS)
        })
        .unwrap_err();
    assert!(
        matches!(err, StoreError::UnknownMemory { id: 99, .. }),
        "{err}"
    );
    let (all, log) = temp
        .store
        .read(|tx| {
            Ok((
                tx.memories(&p, MemoryStatus::ALL)?,
                tx.memory_log_since(&p, 0)?,
            ))
        })
        .unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(
        (
            all[0].record.content.as_str(),
            all[0].record.category,
            all[0].record.status
        ),
        (
            "Port 9090",
            MemoryCategory::Constraints,
            MemoryStatus::Archived
        )
    );
    assert_eq!(
        log_actions(&log),
        [
            (1, MemoryAction::Added, Some("operator")),
            (
                1,
                MemoryAction::Changed,
                Some("content, category CONFIG_VALUES -> CONSTRAINTS")
            ),
            (1, MemoryAction::Archived, None),
        ]
    );
    let since_first = temp
        .store
        .read(|tx| tx.memory_log_since(&p, log[0].id))
        .unwrap();
    assert_eq!(since_first, log[1..]);
}

#[test]
fn another_projects_memory_is_never_seen_nor_changed() {
    let temp = TempStore::new();
    let (mine, theirs) = (project("mine"), project("theirs"));
    temp.store
        .write(|tx| {
            tx.add_memory(
                &theirs,
                &operator(MemoryCategory::Naming, "Secret rule"),
                NOW_MS,
            )?;
            // The same words in another project are a memory of their own.
            tx.add_memory(
                &mine,
                &operator(MemoryCategory::Naming, "Secret rule"),
                NOW_MS,
            )
        })
        .unwrap();
    let (listed, got, log) = temp
        .store
        .read(|tx| {
            Ok((
                tx.memories(&mine, MemoryStatus::ALL)?,
                tx.memory(&mine, 1)?,
                tx.memory_log_since(&mine, 0)?,
            ))
        })
        .unwrap();
    assert_eq!(listed.iter().map(|m| m.id).collect::<Vec<_>>(), [2]);
    assert_eq!(got, None);
    assert_eq!(
        log_actions(&log),
        [(2, MemoryAction::Added, Some("operator"))]
    );
    for attempt in [
        temp.store.write(|tx| {
            tx.archive_memory(&mine, 1, MemorySource::Operator, NOW_MS)
                .map(|_| ())
        }),
        temp.store.write(|tx| {
            tx.edit_memory(
                &mine,
                1,
                MemoryEdit {
                    category: None,
                    content: Some("x"),
                },
                MemorySource::Operator,
                NOW_MS,
            )
            .map(|_| ())
        }),
        temp.store.write(|tx| {
            tx.supersede_memory(&mine, 2, 1, MemorySource::Operator, NOW_MS)
                .map(|_| ())
        }),
    ] {
        let err = attempt.unwrap_err();
        assert!(
            matches!(err, StoreError::UnknownMemory { id: 1, .. }),
            "{err}"
        );
    }
    let theirs_now = temp.store.read(|tx| tx.memories(&theirs, LIVE)).unwrap();
    assert_eq!(theirs_now[0].record.content, "Secret rule");
}

#[test]
fn supersede_retires_the_old_memory_naming_its_successor() {
    let temp = TempStore::new();
    let p = project("p1");
    temp.store
        .write(|tx| {
            tx.add_memory(
                &p,
                &operator(MemoryCategory::ConfigValues, "Port 8080"),
                NOW_MS,
            )?;
            tx.add_memory(
                &p,
                &operator(MemoryCategory::ConfigValues, "Port 9090"),
                NOW_MS,
            )?;
            tx.supersede_memory(&p, 1, 2, MemorySource::Operator, NOW_MS + 5)
        })
        .unwrap();
    let (old, live, log) = temp
        .store
        .read(|tx| {
            Ok((
                tx.memory(&p, 1)?,
                tx.memories(&p, LIVE)?,
                tx.memory_log_since(&p, 2)?,
            ))
        })
        .unwrap();
    let old = old.unwrap();
    assert_eq!(
        (old.record.status, old.superseded_by, old.record.updated_ms),
        (MemoryStatus::Archived, Some(2), NOW_MS + 5)
    );
    assert_eq!(live.iter().map(|m| m.id).collect::<Vec<_>>(), [2]);
    assert_eq!(
        log_actions(&log),
        [(1, MemoryAction::Superseded, Some("by 2"))]
    );
    // A retired memory cannot be superseded again, nor edited; its words may be added anew.
    let err = temp
        .store
        .write(|tx| tx.supersede_memory(&p, 1, 2, MemorySource::Operator, NOW_MS))
        .unwrap_err();
    assert!(
        matches!(err, StoreError::MemoryRefused { id: 1, .. }),
        "{err}"
    );
    let again = temp
        .store
        .write(|tx| {
            tx.add_memory(
                &p,
                &operator(MemoryCategory::ConfigValues, "Port 8080"),
                NOW_MS,
            )
        })
        .unwrap();
    assert_eq!(again, Added::New(3));
}

#[test]
fn an_edit_onto_another_memorys_words_is_refused() {
    let temp = TempStore::new();
    let p = project("p1");
    let err = temp
        .store
        .write(|tx| {
            tx.add_memory(&p, &operator(MemoryCategory::Naming, "A"), NOW_MS)?;
            tx.add_memory(&p, &operator(MemoryCategory::Naming, "B"), NOW_MS)?;
            tx.edit_memory(
                &p,
                2,
                MemoryEdit {
                    category: None,
                    content: Some("a."),
                },
                MemorySource::Operator,
                NOW_MS,
            )
        })
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::DuplicateMemory {
                id: 2,
                existing: 1,
                ..
            }
        ),
        "{err}"
    );
    let empty = temp
        .store
        .write(|tx| tx.add_memory(&p, &operator(MemoryCategory::Naming, " . "), NOW_MS))
        .unwrap_err();
    assert!(matches!(empty, StoreError::EmptyMemory), "{empty}");
}

#[test]
fn historian_facts_are_promoted_once_merging_and_never_reviving_archived_ones() {
    let temp = TempStore::new();
    let p = project("proj");
    let session = sid("s1");
    let scope = history_scope(&session, Some(p.as_str()));
    let promoted = temp
        .store
        .write(|tx| {
            tx.upsert_session(&new_session("s1"), NOW_MS)?;
            let facts = [
                (MemoryCategory::Naming, "Tests end in _test.".to_owned()),
                (MemoryCategory::Naming, "tests end in _test".to_owned()),
                (MemoryCategory::ConfigValues, "Port 8080.".to_owned()),
                (
                    MemoryCategory::Constraints,
                    "No network in tests".to_owned(),
                ),
            ];
            tx.store_facts(&scope, &session, &facts, NOW_MS)?;
            tx.store_facts(
                &history_scope(&session, Some("other")),
                &session,
                &facts,
                NOW_MS,
            )?;
            tx.add_memory(
                &p,
                &operator(MemoryCategory::ConfigValues, "port 8080"),
                NOW_MS,
            )?;
            tx.add_memory(
                &p,
                &operator(MemoryCategory::Constraints, "No network in tests"),
                NOW_MS,
            )?;
            tx.archive_memory(&p, 2, MemorySource::Operator, NOW_MS)?;
            let first = tx.promote_historian_facts(&p, NOW_MS + 10)?;
            let second = tx.promote_historian_facts(&p, NOW_MS + 20)?;
            Ok((first, second))
        })
        .unwrap();
    assert_eq!(promoted, (1, 0));
    let live = temp.store.read(|tx| tx.memories(&p, LIVE)).unwrap();
    let summary: Vec<_> = live
        .iter()
        .map(|m| {
            (
                m.id,
                m.record.content.as_str(),
                m.record.source,
                m.record.seen_count,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (1, "port 8080", MemorySource::Operator, 1),
            (3, "Tests end in _test.", MemorySource::Historian, 2),
        ]
    );
    let log = temp.store.read(|tx| tx.memory_log_since(&p, 3)).unwrap();
    assert_eq!(
        log_actions(&log),
        [(3, MemoryAction::Added, Some("historian"))]
    );
}

#[test]
fn import_is_idempotent_and_keeps_the_record() {
    let temp = TempStore::new();
    let p = project("p1");
    let record = MemoryRecord {
        category: MemoryCategory::Architecture,
        content: "The store is SQLite".into(),
        status: MemoryStatus::Permanent,
        source: MemorySource::Agent,
        seen_count: 4,
        created_ms: 10,
        updated_ms: 20,
    };
    let retired = MemoryRecord {
        status: MemoryStatus::Archived,
        content: "The store is JSON".into(),
        ..record.clone()
    };
    let outcomes = temp
        .store
        .write(|tx| {
            let mut outcomes = Vec::new();
            for _ in 0..2 {
                outcomes.push(tx.import_memory(&p, &record, NOW_MS)?);
                outcomes.push(tx.import_memory(&p, &retired, NOW_MS)?);
            }
            Ok(outcomes)
        })
        .unwrap();
    assert_eq!(
        outcomes,
        [
            Added::New(1),
            Added::New(2),
            Added::Merged(1),
            Added::Merged(2)
        ]
    );
    let all = temp
        .store
        .read(|tx| tx.memories(&p, MemoryStatus::ALL))
        .unwrap();
    assert_eq!(
        all.into_iter().map(|m| m.record).collect::<Vec<_>>(),
        [record, retired]
    );
}

#[test]
fn the_schema_refuses_two_live_memories_with_one_key_but_not_an_archived_twin() {
    let temp = TempStore::new();
    let conn = rusqlite::Connection::open(temp.path()).unwrap();
    let insert = |status: &str| {
        conn.execute(
            "INSERT INTO memories (project_id, category, content, content_key, status,
               seen_count, source, created_ms, updated_ms)
             VALUES ('p', 'NAMING', 'A', 'a', ?1, 1, 'operator', 0, 0)",
            [status],
        )
    };
    insert("archived").unwrap();
    insert("active").unwrap();
    insert("archived").unwrap();
    let err = insert("permanent").unwrap_err();
    assert_eq!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::ConstraintViolation)
    );
    let bad_status = conn
        .execute(
            "INSERT INTO memories (project_id, category, content, content_key, status,
               seen_count, source, created_ms, updated_ms)
             VALUES ('p', 'NAMING', 'B', 'b', 'superseded', 1, 'operator', 0, 0)",
            [],
        )
        .unwrap_err();
    assert_eq!(
        bad_status.sqlite_error_code(),
        Some(rusqlite::ErrorCode::ConstraintViolation)
    );
}
