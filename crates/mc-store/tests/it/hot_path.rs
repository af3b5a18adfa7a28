//! What a managed call reads on every pass: branch heads, the log's end, drops and their
//! version, the warm read, and the v4 raw log holding what a v3 store held.

use mc_core::reduction::DropState;
use mc_core::tags::{TagAssignment, TagNo, UnitRef};
use mc_core::{HashChain, Role};
use mc_store::{LogEnd, SCHEMA_VERSION, Store};

use crate::support::{NOW_MS, TempStore, seed, sid, text, turns};

#[test]
fn branches_are_the_base_and_its_forks_only() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    seed(store, "a", &turns(3), NOW_MS);
    store
        .write(|tx| {
            tx.fork_session(&sid("a"), &sid("a~1"), 2, NOW_MS + 2)?;
            tx.fork_session(&sid("a"), &sid("a~3"), 0, NOW_MS + 3)?;
            Ok(())
        })
        .unwrap();
    // Ids sharing the base as a plain prefix, or sorting right next to its range, are
    // other conversations; so are sessions a client named `a~…` itself (no parent), and a
    // fork of another session that happens to share the prefix without a number.
    for other in ["ab", "a-b", "a}", "b", "A~1", "a~", "a~2"] {
        seed(store, other, &turns(1), NOW_MS + 5);
    }
    store
        .write(|tx| {
            tx.fork_session(&sid("b"), &sid("a~2x"), 1, NOW_MS + 1)
                .map(drop)
        })
        .unwrap();
    let branches = store.read(|tx| tx.branches(&sid("a"))).unwrap();
    let seen: Vec<(&str, u64, Option<_>)> = branches
        .iter()
        .map(|branch| (branch.session.id.as_str(), branch.count, branch.head))
        .collect();
    let head = |count| HashChain::of(&turns(count)).head().copied();
    assert_eq!(
        seen,
        vec![("a~3", 0, None), ("a~1", 2, head(2)), ("a", 3, head(3)),]
    );
    // Each head is what the log's end says.
    for branch in &branches {
        let end = store.read(|tx| tx.log_end(&branch.session.id)).unwrap();
        assert_eq!(
            end,
            LogEnd {
                count: branch.count,
                head: branch.head
            }
        );
    }
}

#[test]
fn the_log_end_of_an_unknown_session_is_empty() {
    let fixture = TempStore::new();
    let end = fixture.store.read(|tx| tx.log_end(&sid("nobody"))).unwrap();
    assert_eq!(end, LogEnd::default());
}

#[test]
fn large_messages_round_trip_and_keep_their_chain() {
    let fixture = TempStore::new();
    let big = "x".repeat(50_000);
    let messages = vec![
        text(Role::User, &big),
        text(Role::Assistant, "short"),
        text(Role::User, &format!("{big}{big}")),
    ];
    seed(&fixture.store, "s", &messages, NOW_MS);
    let stored = fixture.store.read(|tx| tx.messages(&sid("s"), ..)).unwrap();
    let back: Vec<_> = stored.iter().map(|row| row.message.clone()).collect();
    assert_eq!(back, messages);
    let end = fixture.store.read(|tx| tx.log_end(&sid("s"))).unwrap();
    assert_eq!(end.head.as_ref(), HashChain::of(&messages).head());
}

fn tag(n: u32) -> TagAssignment {
    TagAssignment {
        tag: TagNo(n),
        unit: UnitRef {
            ordinal: u64::from(n),
            part: 0,
        },
    }
}

#[test]
fn drop_state_splits_queued_and_landed() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    seed(store, "s", &turns(4), NOW_MS);
    store
        .write(|tx| {
            tx.insert_tags(&sid("s"), &[tag(1), tag(2), tag(3)])?;
            tx.queue_drop(&sid("s"), TagNo(1), "ctx_reduce", NOW_MS)?;
            tx.queue_drop(&sid("s"), TagNo(3), "operator", NOW_MS)?;
            tx.land_drops(&sid("s"), &[TagNo(3)], 0)
        })
        .unwrap();
    let state = store.read(|tx| tx.drop_state(&sid("s"))).unwrap();
    assert_eq!(
        state,
        DropState {
            queued: [TagNo(1)].into(),
            landed: [TagNo(3)].into(),
        }
    );
    assert_eq!(
        store.read(|tx| tx.drop_state(&sid("other"))).unwrap(),
        DropState::default()
    );
}

#[test]
fn the_drops_version_moves_with_every_drop_write_and_only_then() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    seed(store, "s", &turns(4), NOW_MS);
    store
        .write(|tx| tx.insert_tags(&sid("s"), &[tag(1), tag(2)]))
        .unwrap();
    let version = || store.write(|tx| tx.drops_version()).unwrap();
    let start = version();
    // Writes that touch no drop leave it, as does landing nothing.
    store
        .write(|tx| {
            tx.touch_session(&sid("s"), NOW_MS + 1)?;
            tx.put_engine_state(&sid("s"), "{}")?;
            tx.land_drops(&sid("s"), &[], 0)
        })
        .unwrap();
    assert_eq!(version(), start);
    store
        .write(|tx| {
            tx.queue_drop(&sid("s"), TagNo(1), "operator", NOW_MS)
                .map(drop)
        })
        .unwrap();
    let queued = version();
    assert_ne!(queued, start);
    store
        .write(|tx| tx.land_drops(&sid("s"), &[TagNo(1)], 0))
        .unwrap();
    let landed = version();
    assert_ne!(landed, queued);
    // A write that rolls back still makes older versions stale (a spurious re-read only).
    let failed: Result<(), _> = store.write(|tx| {
        tx.queue_drop(&sid("s"), TagNo(2), "operator", NOW_MS)?;
        Err(mc_store::StoreError::UnknownSession {
            session: sid("rolled back"),
        })
    });
    assert!(failed.is_err());
    assert_ne!(version(), landed);
}

#[test]
fn another_store_on_the_file_makes_the_drops_version_stale() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    seed(store, "s", &turns(4), NOW_MS);
    store
        .write(|tx| tx.insert_tags(&sid("s"), &[tag(1)]))
        .unwrap();
    let before = store.write(|tx| tx.drops_version()).unwrap();
    let other = Store::open(fixture.path()).unwrap();
    other
        .write(|tx| {
            tx.queue_drop(&sid("s"), TagNo(1), "operator", NOW_MS)
                .map(drop)
        })
        .unwrap();
    let after = store.write(|tx| tx.drops_version()).unwrap();
    assert_ne!(after, before);
    assert_eq!(
        store.write(|tx| tx.drop_state(&sid("s"))).unwrap().queued,
        [TagNo(1)].into()
    );
}

#[test]
fn a_warm_read_sees_what_a_read_sees_and_never_waits_for_the_writer() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    seed(store, "s", &turns(3), NOW_MS);
    let warm = store.read_warm(|tx| tx.log_end(&sid("s"))).unwrap();
    assert_eq!(warm, store.read(|tx| tx.log_end(&sid("s"))).unwrap());
    // Inside a write transaction the writer is busy: the warm read goes to a reader, which
    // sees the last commit, not the open transaction.
    store
        .write(|tx| {
            tx.append_messages(&sid("s"), 3, &turns(1), NOW_MS)?;
            let seen = store.read_warm(|read| read.log_end(&sid("s")))?;
            assert_eq!(seen, warm);
            Ok(())
        })
        .unwrap();
    assert_eq!(
        store.read_warm(|tx| tx.log_end(&sid("s"))).unwrap().count,
        4
    );
}

#[test]
fn a_v3_store_keeps_its_raw_log_through_the_v4_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("context.db");
    let messages = vec![
        text(Role::User, &"y".repeat(9_000)),
        text(Role::Assistant, "done"),
    ];
    let chain = HashChain::of(&messages);
    {
        // A store as schema v3 left it, written without this binary's migrations.
        let conn = rusqlite::Connection::open(&path).unwrap();
        for sql in [
            include_str!("../../src/migrations/0001_sessions_messages.sql"),
            include_str!("../../src/migrations/0002_engine_state.sql"),
            include_str!("../../src/migrations/0003_call_ledger.sql"),
        ] {
            conn.execute_batch(sql).unwrap();
        }
        conn.execute_batch(
            "INSERT INTO schema_migrations VALUES (1, 'sessions and raw messages'),
                 (2, 'engine state: tags, drops, passes'), (3, 'call ledger');
             INSERT INTO sessions (id, host, created_ms, last_seen_ms)
                 VALUES ('old', 'claude-code', 1, 2);
             PRAGMA user_version = 3;",
        )
        .unwrap();
        for (ordinal, (message, link)) in messages.iter().zip(chain.links()).enumerate() {
            conn.execute(
                "INSERT INTO messages (session_id, ordinal, role, content, hash, chain, created_ms)
                 VALUES ('old', ?1, ?2, ?3, ?4, ?5, 7)",
                (
                    ordinal,
                    message.role.as_str(),
                    serde_json::to_string(&message.parts).unwrap(),
                    message.content_hash().as_bytes(),
                    link.as_bytes(),
                ),
            )
            .unwrap();
        }
    }

    let store = Store::open(&path).unwrap();
    assert_eq!(
        store.read(|tx| tx.health()).unwrap().schema_version,
        SCHEMA_VERSION
    );
    let stored = store.read(|tx| tx.messages(&sid("old"), ..)).unwrap();
    let back: Vec<_> = stored.iter().map(|row| row.message.clone()).collect();
    assert_eq!(back, messages);
    assert!(stored.iter().all(|row| row.created_ms == 7));
    let end = store.read(|tx| tx.log_end(&sid("old"))).unwrap();
    assert_eq!(end.count, 2);
    assert_eq!(end.head.as_ref(), chain.head());
    let found = store
        .read(|tx| tx.find_by_chain(&chain.links()[0]))
        .unwrap()
        .unwrap();
    assert_eq!((found.session, found.ordinal), (sid("old"), 0));
    // The log still continues its chain and still refuses changes.
    store
        .write(|tx| tx.append_messages(&sid("old"), 2, &turns(1), NOW_MS))
        .unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    for sql in [
        "UPDATE messages SET content = '[]' WHERE ordinal = 0",
        "DELETE FROM messages WHERE ordinal = 0",
    ] {
        let err = conn.execute(sql, []).unwrap_err();
        assert!(err.to_string().contains("append-only"), "{err}");
    }
}
