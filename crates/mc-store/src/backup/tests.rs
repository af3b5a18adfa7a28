use mc_core::{Host, Message, Part, Role, SessionId};

use super::*;
use crate::NewSession;

fn add_session(store: &Store, name: &str) {
    let id = SessionId::new(name).unwrap();
    store
        .write(|tx| {
            tx.upsert_session(
                &NewSession {
                    id: id.clone(),
                    host: Host::ClaudeCode,
                    project: None,
                },
                1,
            )?;
            let hello = Message::new(Role::User, vec![Part::text("fix the flaky test")]);
            tx.append_messages(&id, 0, &[hello], 1)
        })
        .unwrap();
}

fn sessions(path: &Path) -> u64 {
    Store::open(path)
        .unwrap()
        .read(|tx| tx.health())
        .unwrap()
        .sessions
}

#[test]
fn a_backup_is_one_private_file_with_what_was_committed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("context.db")).unwrap();
    add_session(&store, "s1");
    let out = dir.path().join("copy.db");
    store.backup_to(&out, false).unwrap();
    assert!(!sibling(&out, "-wal").exists());
    assert!(!sibling(&out, ".partial").exists());
    assert_eq!(check_backup(&out).unwrap(), SCHEMA_VERSION);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&out).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    add_session(&store, "s2");
    assert!(matches!(
        store.backup_to(&out, false),
        Err(StoreError::BackupExists { .. })
    ));
    assert_eq!(
        sessions(&out),
        1,
        "a refused backup leaves the file as it was"
    );
    store.backup_to(&out, true).unwrap();
    assert_eq!(sessions(&out), 2);
}

#[test]
fn a_restore_keeps_the_previous_store_and_refuses_while_it_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("context.db");
    let store = Store::open(&db).unwrap();
    add_session(&store, "s1");
    let out = dir.path().join("copy.db");
    store.backup_to(&out, false).unwrap();
    add_session(&store, "s2");

    assert!(matches!(
        restore_backup(&out, &db),
        Err(StoreError::StoreInUse { .. })
    ));
    drop(store);
    assert_eq!(sessions(&db), 2, "a refused restore changes nothing");

    let restored = restore_backup(&out, &db).unwrap();
    let kept = sibling(&db, BEFORE_RESTORE_SUFFIX);
    assert_eq!(restored.previous.as_deref(), Some(kept.as_path()));
    assert_eq!(sessions(&db), 1);
    assert_eq!(sessions(&kept), 2);
    assert!(matches!(
        restore_backup(&out, &db),
        Err(StoreError::PreviousKept { .. })
    ));
}

#[test]
fn only_a_store_this_build_knows_is_restored() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    assert!(matches!(
        check_backup(&missing),
        Err(StoreError::NotAStore { .. })
    ));
    let text = dir.path().join("notes.txt");
    fs::write(&text, "not a database at all, just some words").unwrap();
    assert!(matches!(
        check_backup(&text),
        Err(StoreError::NotAStore { .. })
    ));
    let foreign = dir.path().join("foreign.db");
    Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    assert!(matches!(
        check_backup(&foreign),
        Err(StoreError::NotAStore { .. })
    ));
    let newer = dir.path().join("newer.db");
    Store::open(&newer).unwrap();
    Connection::open(&newer)
        .unwrap()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    assert!(matches!(
        check_backup(&newer),
        Err(StoreError::BackupTooNew { .. })
    ));
    let db = dir.path().join("context.db");
    assert!(restore_backup(&newer, &db).is_err());
    assert!(!db.exists());
}

#[test]
fn the_size_counts_the_file_and_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("context.db");
    assert_eq!(store_size(&db).total_bytes(), 0);
    let store = Store::open(&db).unwrap();
    add_session(&store, "s1");
    let size = store_size(&db);
    assert_eq!(size.db_bytes, fs::metadata(&db).unwrap().len());
    assert_eq!(size.total_bytes(), size.db_bytes + size.wal_bytes);
    assert!(size.total_bytes() > 0);
}
