//! The store is private: a 0700 directory, 0600 database, WAL and shared-memory files.
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use mc_store::{DataLocation, DirOwner, Store, StoreOptions};

use crate::support::{NOW_MS, new_session};

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_new_store_and_its_wal_files_are_private() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("share").join("magic-context");
    let db = dir.join("context.db");
    let store = Store::open(&db).unwrap();
    // A write makes sure both the WAL and the shared-memory index exist.
    store
        .write(|tx| tx.upsert_session(&new_session("s"), NOW_MS))
        .unwrap();

    let wal = dir.join("context.db-wal");
    let shm = dir.join("context.db-shm");
    assert!(
        wal.exists() && shm.exists(),
        "WAL mode creates -wal and -shm"
    );
    let modes = [mode(&dir), mode(&db), mode(&wal), mode(&shm)];
    assert_eq!(modes, [0o700, 0o600, 0o600, 0o600]);
}

#[test]
fn our_own_directory_is_tightened_a_users_is_not() {
    let root = tempfile::tempdir().unwrap();
    let ours = root.path().join("magic-context");
    let theirs = root.path().join("chosen-by-user");
    for dir in [&ours, &theirs] {
        fs::create_dir(dir).unwrap();
        fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).unwrap();
    }

    let location = DataLocation {
        dir: ours.clone(),
        owner: DirOwner::Us,
    };
    drop(Store::open_location(&location, StoreOptions::default()).unwrap());
    assert_eq!(mode(&ours), 0o700);
    assert_eq!(mode(&ours.join("context.db")), 0o600);

    let location = DataLocation {
        dir: theirs.clone(),
        owner: DirOwner::User,
    };
    drop(Store::open_location(&location, StoreOptions::default()).unwrap());
    assert_eq!(
        mode(&theirs),
        0o755,
        "a directory the user chose keeps its mode"
    );
    assert_eq!(
        mode(&theirs.join("context.db")),
        0o600,
        "the file we create is still private"
    );
}

#[test]
fn an_existing_files_mode_is_left_alone() {
    let root = tempfile::tempdir().unwrap();
    let db = root.path().join("context.db");
    drop(Store::open(&db).unwrap());
    fs::set_permissions(&db, fs::Permissions::from_mode(0o640)).unwrap();
    drop(Store::open(&db).unwrap());
    assert_eq!(mode(&db), 0o640);
}
