//! Several writers on one file: no SQLITE_BUSY, nothing lost; a lock held too long is `Busy`.

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use mc_core::HashChain;
use mc_store::{Store, StoreError, StoreOptions};

use crate::support::{NOW_MS, TempStore, new_session, sid, text};

#[test]
fn eight_stores_appending_at_once_lose_nothing() {
    const WRITERS: usize = 8;
    const APPENDS: u64 = 200;
    let fixture = TempStore::new();
    let path = Arc::new(fixture.path());
    let barrier = Arc::new(Barrier::new(WRITERS));
    let handles: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (path, barrier) = (Arc::clone(&path), Arc::clone(&barrier));
            thread::spawn(move || -> Result<(), StoreError> {
                let store = Store::open(path.as_path())?;
                let id = sid(&format!("writer-{writer}"));
                store.write(|tx| tx.upsert_session(&new_session(id.as_str()), NOW_MS))?;
                barrier.wait();
                for ordinal in 0..APPENDS {
                    let message = text(mc_core::Role::User, &format!("{writer}:{ordinal}"));
                    store.write(|tx| {
                        tx.touch_session(&id, NOW_MS + ordinal as i64)?;
                        tx.append_messages(&id, ordinal, &[message], NOW_MS)
                    })?;
                    // Interleave reads on the same file, as the proxy does.
                    if ordinal % 50 == 0 {
                        store.read(|tx| tx.message_count(&id))?;
                    }
                }
                Ok(())
            })
        })
        .collect();
    let errors: Vec<String> = handles
        .into_iter()
        .filter_map(|handle| handle.join().unwrap().err().map(|err| err.to_string()))
        .collect();
    assert_eq!(errors, Vec::<String>::new());

    for writer in 0..WRITERS {
        let id = sid(&format!("writer-{writer}"));
        let stored = fixture.store.read(|tx| tx.messages(&id, ..)).unwrap();
        let expected: Vec<_> = (0..APPENDS)
            .map(|ordinal| text(mc_core::Role::User, &format!("{writer}:{ordinal}")))
            .collect();
        let messages: Vec<_> = stored.iter().map(|row| row.message.clone()).collect();
        assert_eq!(messages, expected);
        let chain: Vec<_> = stored.iter().map(|row| row.chain).collect();
        assert_eq!(chain, HashChain::of(&expected).links());
        let session = fixture
            .store
            .read(|tx| tx.get_session(&id))
            .unwrap()
            .unwrap();
        assert_eq!(session.last_seen_ms, NOW_MS + APPENDS as i64 - 1);
    }
}

#[test]
fn a_lock_held_past_the_timeout_is_busy_and_retryable() {
    let fixture = TempStore::new();
    let options = StoreOptions {
        busy_timeout: Duration::from_millis(100),
        ..StoreOptions::default()
    };
    let store = Store::open_with(fixture.path(), options).unwrap();
    let blocker = rusqlite::Connection::open(fixture.path()).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();

    let err = store
        .write(|tx| tx.upsert_session(&new_session("s"), NOW_MS))
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Busy {
                doing: "starting a write transaction",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.is_retryable());
    // Reads are not blocked by a writer.
    assert_eq!(store.read(|tx| tx.list_sessions(10)).unwrap(), vec![]);

    blocker.execute_batch("COMMIT").unwrap();
    store
        .write(|tx| tx.upsert_session(&new_session("s"), NOW_MS))
        .unwrap();
}

#[test]
fn a_failed_write_rolls_back_whole() {
    let fixture = TempStore::new();
    let err = fixture
        .store
        .write(|tx| {
            tx.upsert_session(&new_session("s"), NOW_MS)?;
            tx.append_messages(&sid("s"), 0, &crate::support::turns(2), NOW_MS)?;
            tx.append_messages(&sid("s"), 5, &crate::support::turns(1), NOW_MS)
        })
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::OrdinalGap {
                expected: 2,
                got: 5,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        fixture.store.read(|tx| tx.get_session(&sid("s"))).unwrap(),
        None
    );
    assert_eq!(
        fixture
            .store
            .read(|tx| tx.message_count(&sid("s")))
            .unwrap(),
        0
    );
}

#[test]
fn a_panicking_write_rolls_back_and_the_store_stays_usable() {
    let fixture = TempStore::new();
    let store = Arc::new(fixture.store);
    let panicking = Arc::clone(&store);
    let joined = thread::spawn(move || {
        panicking.write(|tx| {
            tx.upsert_session(&new_session("ghost"), NOW_MS)?;
            panic!("a bug in the caller");
            #[expect(unreachable_code, reason = "the panic above is the point of the test")]
            Ok(())
        })
    })
    .join();
    assert!(joined.is_err());
    assert_eq!(
        store.read(|tx| tx.get_session(&sid("ghost"))).unwrap(),
        None
    );
    store
        .write(|tx| tx.upsert_session(&new_session("alive"), NOW_MS))
        .unwrap();
}
