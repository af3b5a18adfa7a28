//! Files the store cannot use are reported with their path and what to do, never a panic.

use std::fs;
use std::path::Path;

use mc_store::{Store, StoreError};

use crate::support::{NOW_MS, TempStore, seed, sid, turns};

/// Deterministic noise (xorshift), so the test needs no random-number crate.
fn noise(len: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

fn assert_corrupt(err: &StoreError, path: &Path) {
    match err {
        StoreError::Corrupt { path: named, .. } => assert_eq!(named, path),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(
        message.contains("move the file aside") && message.contains("backup"),
        "{message}"
    );
}

#[test]
fn a_file_of_random_bytes_is_corrupt_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("context.db");
    let bytes = noise(64 * 1024);
    fs::write(&path, &bytes).unwrap();
    assert_corrupt(&Store::open(&path).unwrap_err(), &path);
    assert_eq!(fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_text_file_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("context.db");
    fs::write(&path, "these are my notes, not a database\n".repeat(200)).unwrap();
    assert_corrupt(&Store::open(&path).unwrap_err(), &path);
}

#[test]
fn a_damaged_schema_page_is_corrupt() {
    let fixture = TempStore::new();
    seed(&fixture.store, "s", &turns(50), NOW_MS);
    let path = fixture.path();
    drop(fixture.store);
    let mut bytes = fs::read(&path).unwrap();
    // Keep the 100-byte header (so SQLite sees a database) and wreck the schema b-tree page.
    bytes[100..4096].copy_from_slice(&noise(3996));
    fs::write(&path, &bytes).unwrap();
    assert_corrupt(&Store::open(&path).unwrap_err(), &path);
}

#[test]
fn a_directory_in_place_of_the_file_is_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("context.db");
    fs::create_dir(&path).unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(
        matches!(&err, StoreError::Unreadable { path: named, .. } if named == &path),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains(&path.display().to_string()) && message.contains("permissions"),
        "{message}"
    );
}

#[test]
fn a_file_in_place_of_the_directory_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("magic-context");
    fs::write(&blocker, "a file").unwrap();
    let err = Store::open(blocker.join("context.db")).unwrap_err();
    assert!(
        matches!(&err, StoreError::DataDir { path, .. } if path == &blocker),
        "{err:?}"
    );
    assert!(err.to_string().contains("MAGIC_CONTEXT_DATA_DIR"), "{err}");
}

#[cfg(unix)]
#[test]
fn a_store_without_permission_is_unreadable() {
    use std::os::unix::fs::PermissionsExt;

    let fixture = TempStore::new();
    let path = fixture.path();
    drop(fixture.store);
    fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
    let locked_dir = fixture.dir.path().join("locked");
    fs::create_dir(&locked_dir).unwrap();
    fs::set_permissions(&locked_dir, fs::Permissions::from_mode(0o000)).unwrap();

    // Root ignores permission bits, so these opens succeed there; the assertions only hold
    // for ordinary users. The probe tells the two apart without calling libc.
    if crate::support::permissions_are_enforced(fixture.dir.path()) {
        let err = Store::open(&path).unwrap_err();
        assert!(
            matches!(&err, StoreError::Unreadable { path: named, .. } if named == &path),
            "{err:?}"
        );
        let err = Store::open(locked_dir.join("context.db")).unwrap_err();
        assert!(
            matches!(
                err,
                StoreError::Unreadable { .. } | StoreError::DataDir { .. }
            ),
            "{err:?}"
        );
    } else {
        assert!(Store::open(&path).is_ok(), "root can open a 0000 file");
    }
    fs::set_permissions(&locked_dir, fs::Permissions::from_mode(0o700)).unwrap();
}

fn raw_insert(path: &Path, ordinal: i64, content: &str, hash: &[u8]) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute(
        "INSERT INTO messages (session_id, ordinal, role, content, hash, chain, created_ms)
         VALUES ('s', ?1, 'user', ?2, ?3, ?4, 0)",
        (ordinal, content, hash, [7u8; 32].as_slice()),
    )
    .unwrap();
}

#[test]
fn a_damaged_row_names_its_session_and_ordinal() {
    let fixture = TempStore::new();
    seed(&fixture.store, "s", &turns(1), NOW_MS);
    raw_insert(&fixture.path(), 1, "{not json", &[0; 32]);
    let err = fixture
        .store
        .read(|tx| tx.messages(&sid("s"), ..))
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::CorruptRow { session, ordinal: 1, problem: mc_store::RowProblem::Json(_) } if session.as_str() == "s"),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("message 1 of session `s`") && message.contains("backup"),
        "{message}"
    );
}

#[test]
fn a_row_whose_content_no_longer_matches_its_hash_is_reported() {
    let fixture = TempStore::new();
    seed(&fixture.store, "s", &turns(1), NOW_MS);
    raw_insert(
        &fixture.path(),
        1,
        r#"[{"kind":"text","text":"edited"}]"#,
        &[0; 32],
    );
    let err = fixture
        .store
        .read(|tx| tx.messages(&sid("s"), 1..))
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::CorruptRow {
                ordinal: 1,
                problem: mc_store::RowProblem::HashMismatch,
                ..
            }
        ),
        "{err:?}"
    );
    // The intact row before it still reads.
    assert_eq!(
        fixture
            .store
            .read(|tx| tx.messages(&sid("s"), ..1))
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn the_raw_log_refuses_updates_and_deletes() {
    let fixture = TempStore::new();
    seed(&fixture.store, "s", &turns(2), NOW_MS);
    let conn = rusqlite::Connection::open(fixture.path()).unwrap();
    for sql in ["UPDATE messages SET content = '[]'", "DELETE FROM messages"] {
        let err = conn.execute(sql, []).unwrap_err();
        assert!(err.to_string().contains("append-only"), "{sql}: {err}");
    }
    assert_eq!(
        fixture
            .store
            .read(|tx| tx.message_count(&sid("s")))
            .unwrap(),
        2
    );
}
