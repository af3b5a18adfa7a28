//! Opening: migrations, the schema fence, and several processes opening one fresh file.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use mc_store::{SCHEMA_VERSION, Store, StoreError};

use crate::support::{NOW_MS, TempStore, new_session, sid, turns};

fn applied_migrations(path: &Path) -> Vec<(u32, String)> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut statement = conn
        .prepare("SELECT version, name FROM schema_migrations ORDER BY version")
        .unwrap();
    statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// Every migration this binary applies, by version and name.
fn every_migration() -> Vec<(u32, String)> {
    vec![
        (1, "sessions and raw messages".to_string()),
        (2, "engine state: tags, drops, passes".to_string()),
        (3, "call ledger".to_string()),
        (4, "raw log keyed by row id, content last".to_string()),
        (5, "learned token corrections per model".to_string()),
        (6, "historian compartments".to_string()),
        (
            7,
            "historian facts, observations, runs and quotes".to_string(),
        ),
        (8, "staging area of compartment rebuilds".to_string()),
        (9, "project memories and their change log".to_string()),
        (10, "full-text search indexes".to_string()),
        (11, "agent notes".to_string()),
        (12, "exchanges the proxy ran for its own tools".to_string()),
        (13, "message search holds the next message".to_string()),
        (14, "when each hidden exchange was last used".to_string()),
        (15, "provisional compartments".to_string()),
        (16, "messages a provider accepted".to_string()),
        (17, "compartment indexes".to_string()),
        (18, "the folder of each project".to_string()),
        (19, "the user's profile".to_string()),
        (
            20,
            "dreamer lease and runs; the task behind a memory change".to_string(),
        ),
        (21, "a whole session can be pruned".to_string()),
        (
            22,
            "session modes and the session a subagent works for".to_string(),
        ),
        (
            23,
            "what a session carries from the conversation its client compacted away".to_string(),
        ),
        (
            24,
            "the client's own prompt and the window on each call".to_string(),
        ),
        (
            25,
            "when each memory was last retrieved or restated".to_string(),
        ),
        (26, "team store cache and write queue".to_string()),
        (
            27,
            "dreamer maintenance through the team write queue".to_string(),
        ),
        (
            28,
            "team-wide memory use and the team's smart notes".to_string(),
        ),
        (29, "the dreamer's pinned key files".to_string()),
        (
            30,
            "the commit index shared through the team store".to_string(),
        ),
    ]
}

fn user_version(path: &Path) -> u32 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap()
}

#[test]
fn reopening_applies_nothing_and_keeps_the_data() {
    let fixture = TempStore::new();
    crate::support::seed(&fixture.store, "s", &turns(3), NOW_MS);
    let path = fixture.path();
    drop(fixture.store);
    for _ in 0..3 {
        let store = Store::open(&path).unwrap();
        assert_eq!(store.read(|tx| tx.message_count(&sid("s"))).unwrap(), 3);
    }
    assert_eq!(user_version(&path), SCHEMA_VERSION);
    assert_eq!(applied_migrations(&path), every_migration());
}

#[test]
fn the_store_uses_wal_and_foreign_keys() {
    let fixture = TempStore::new();
    let conn = rusqlite::Connection::open(fixture.path()).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    // Foreign keys are on in the store's own connections: a message of no session is refused.
    let err = fixture
        .store
        .write(|tx| tx.append_messages(&sid("nobody"), 0, &turns(1), NOW_MS))
        .unwrap_err();
    assert!(matches!(err, StoreError::UnknownSession { .. }), "{err}");
}

#[test]
fn a_newer_schema_is_refused_and_the_file_left_untouched() {
    let fixture = TempStore::new();
    let path = fixture.path();
    drop(fixture.store);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
    }
    let before = fs::read(&path).unwrap();

    let err = Store::open(&path).unwrap_err();
    match &err {
        StoreError::SchemaTooNew {
            path: named,
            found: 99,
            supported,
        } => {
            assert_eq!(named, &path);
            assert_eq!(*supported, SCHEMA_VERSION);
        }
        other => panic!("expected SchemaTooNew, got {other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(
        message.contains("schema v99") && message.contains("upgrade magic-context"),
        "{message}"
    );
    assert_eq!(fs::read(&path).unwrap(), before, "the fence must not write");
}

#[test]
fn an_sqlite_file_of_another_program_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("context.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');")
            .unwrap();
    }
    let before = fs::read(&path).unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::ForeignDatabase { .. }), "{err}");
    assert_eq!(fs::read(&path).unwrap(), before);
}

#[test]
fn threads_opening_one_fresh_file_at_once_all_succeed_and_migrate_once() {
    for round in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let path = Arc::new(dir.path().join("context.db"));
        let barrier = Arc::new(Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (path, barrier) = (Arc::clone(&path), Arc::clone(&barrier));
                thread::spawn(move || {
                    barrier.wait();
                    let store = Store::open(path.as_path())?;
                    let id = format!("s-{i}");
                    store
                        .write(|tx| tx.upsert_session(&new_session(&id), NOW_MS))
                        .map(drop)
                })
            })
            .collect();
        for handle in handles {
            if let Err(err) = handle.join().unwrap() {
                panic!("round {round}: open failed: {err}");
            }
        }
        assert_eq!(user_version(&path), SCHEMA_VERSION);
        assert_eq!(applied_migrations(&path), every_migration());
        let store = Store::open(path.as_path()).unwrap();
        assert_eq!(store.read(|tx| tx.list_sessions(100)).unwrap().len(), 8);
    }
}

/// Run as a child process by the test below; does nothing unless given a path.
#[test]
#[ignore = "helper run in a child process by processes_opening_one_fresh_file_at_once"]
fn child_process_opens_the_store() {
    let Some(path) = std::env::var_os("MC_STORE_IT_CHILD_DB") else {
        return;
    };
    let id = std::env::var("MC_STORE_IT_CHILD_ID").unwrap();
    let store = Store::open(&path).unwrap();
    store
        .write(|tx| tx.upsert_session(&new_session(&id), NOW_MS))
        .unwrap();
}

#[test]
fn processes_opening_one_fresh_file_at_once_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("context.db");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..4)
        .map(|i| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "open::child_process_opens_the_store",
                    "--ignored",
                    "--test-threads=1",
                ])
                .env("MC_STORE_IT_CHILD_DB", &path)
                .env("MC_STORE_IT_CHILD_ID", format!("child-{i}"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect::<Vec<_>>();
    // Spawned processes run concurrently with this one opening the same file.
    let store = Store::open(&path).unwrap();
    for child in children {
        let child = wait_within(child, CHILD_DEADLINE);
        let stdout = String::from_utf8_lossy(&child.stdout);
        assert!(
            child.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&child.stderr)
        );
        assert!(stdout.contains("1 passed"), "{stdout}");
    }
    assert_eq!(store.read(|tx| tx.list_sessions(100)).unwrap().len(), 4);
    assert_eq!(applied_migrations(&path), every_migration());
}

/// How long a child opening the store may take: it does one open and one write, so longer
/// means it is stuck (on a lock, say).
const CHILD_DEADLINE: Duration = Duration::from_secs(120);

/// Waits for `child` to exit and returns its output; past `limit` kills it and fails, so a
/// stuck child fails this test instead of hanging the suite. The children print a line or
/// two, far below a pipe's capacity, so reading after the exit cannot block them.
fn wait_within(mut child: std::process::Child, limit: Duration) -> std::process::Output {
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("a child opening the store ran past {limit:?}; killed it");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}
