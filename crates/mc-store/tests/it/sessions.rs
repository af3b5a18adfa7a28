//! The sessions repository.

use mc_core::{Host, ProjectId, SessionMode};
use mc_store::{NewSession, SessionRecord, StoreError};

use crate::support::{NOW_MS, TempStore, sid};

fn record(
    id: &str,
    host: Host,
    project: Option<&str>,
    created_ms: i64,
    last_seen_ms: i64,
) -> SessionRecord {
    SessionRecord {
        id: sid(id),
        host,
        project: project.map(|project| ProjectId::new(project).unwrap()),
        fork: None,
        created_ms,
        last_seen_ms,
        mode: SessionMode::Primary,
        spawned_by: None,
    }
}

/// A subagent's mode and parent are stored; a later pass that names no parent keeps it, a
/// change of mode (compaction turned off) is taken, and its forks inherit both.
#[test]
fn a_sessions_mode_and_parent_are_kept() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    for id in ["lead", "helper"] {
        let new = NewSession {
            id: sid(id),
            host: Host::ClaudeCode,
            project: None,
        };
        store.write(|tx| tx.upsert_session(&new, NOW_MS)).unwrap();
    }
    let lead = sid("lead");
    store
        .write(|tx| tx.set_session_mode(&sid("helper"), SessionMode::Subagent, Some(&lead)))
        .unwrap();
    let read = |id: &str| store.read(|tx| tx.get_session(&sid(id))).unwrap().unwrap();
    let helper = read("helper");
    assert_eq!(
        (helper.mode, helper.spawned_by),
        (SessionMode::Subagent, Some(lead.clone()))
    );
    store
        .write(|tx| tx.set_session_mode(&sid("helper"), SessionMode::CompactionOff, None))
        .unwrap();
    let helper = read("helper");
    assert_eq!(
        (helper.mode, helper.spawned_by),
        (SessionMode::CompactionOff, Some(lead.clone()))
    );
    store
        .write(|tx| tx.fork_session(&sid("helper"), &sid("helper~1"), 0, NOW_MS + 1))
        .unwrap();
    let fork = read("helper~1");
    assert_eq!(
        (fork.mode, fork.spawned_by),
        (SessionMode::CompactionOff, Some(lead))
    );
    let unknown = store.write(|tx| tx.set_session_mode(&sid("nobody"), SessionMode::Primary, None));
    assert!(
        matches!(unknown, Err(StoreError::UnknownSession { .. })),
        "{unknown:?}"
    );
}

#[test]
fn upsert_creates_then_marks_seen() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    let first = NewSession {
        id: sid("s"),
        host: Host::Codex,
        project: None,
    };
    let created = store.write(|tx| tx.upsert_session(&first, NOW_MS)).unwrap();
    assert_eq!(created, record("s", Host::Codex, None, NOW_MS, NOW_MS));

    // Seen again later from another host with a project: keeps host and creation time,
    // learns the project.
    let again = NewSession {
        id: sid("s"),
        host: Host::Pi,
        project: Some(ProjectId::new("p1").unwrap()),
    };
    let updated = store
        .write(|tx| tx.upsert_session(&again, NOW_MS + 10))
        .unwrap();
    assert_eq!(
        updated,
        record("s", Host::Codex, Some("p1"), NOW_MS, NOW_MS + 10)
    );

    // A known project is not replaced, and a clock stepping back does not move last_seen.
    let other = NewSession {
        project: Some(ProjectId::new("p2").unwrap()),
        ..again
    };
    let kept = store
        .write(|tx| tx.upsert_session(&other, NOW_MS - 5))
        .unwrap();
    assert_eq!(
        kept,
        record("s", Host::Codex, Some("p1"), NOW_MS, NOW_MS + 10)
    );
    assert_eq!(
        store.read(|tx| tx.get_session(&sid("s"))).unwrap(),
        Some(kept)
    );
}

#[test]
fn touch_moves_last_seen_forward_only() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    crate::support::seed(store, "s", &[], NOW_MS);
    store
        .write(|tx| tx.touch_session(&sid("s"), NOW_MS + 100))
        .unwrap();
    store
        .write(|tx| tx.touch_session(&sid("s"), NOW_MS + 50))
        .unwrap();
    let session = store.read(|tx| tx.get_session(&sid("s"))).unwrap().unwrap();
    assert_eq!(
        (session.created_ms, session.last_seen_ms),
        (NOW_MS, NOW_MS + 100)
    );

    let err = store
        .write(|tx| tx.touch_session(&sid("missing"), NOW_MS))
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::UnknownSession { session } if session.as_str() == "missing"),
        "{err:?}"
    );
    assert_eq!(
        store.read(|tx| tx.get_session(&sid("missing"))).unwrap(),
        None
    );
}

#[test]
fn list_is_most_recent_first_and_limited() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    for (id, seen) in [("a", 3), ("b", 1), ("c", 3), ("d", 2)] {
        crate::support::seed(store, id, &[], NOW_MS + seen);
    }
    let ids = |limit| -> Vec<String> {
        store
            .read(|tx| tx.list_sessions(limit))
            .unwrap()
            .into_iter()
            .map(|session| session.id.to_string())
            .collect()
    };
    assert_eq!(ids(10), ["a", "c", "d", "b"]);
    assert_eq!(ids(2), ["a", "c"]);
    assert_eq!(ids(0), Vec::<String>::new());
}
