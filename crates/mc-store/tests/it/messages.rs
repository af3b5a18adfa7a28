//! The raw message log: contiguity, round trips, chain lookup.

use mc_core::{HashChain, Role};
use mc_store::{ChainMatch, StoreError, StoredMessage};

use crate::support::{NOW_MS, TempStore, every_part_kind, new_session, seed, sid, text, turns};

#[test]
fn appends_must_continue_exactly_at_the_end() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    seed(store, "s", &turns(3), NOW_MS);
    for wrong in [0, 2, 4, 100] {
        let err = store
            .write(|tx| tx.append_messages(&sid("s"), wrong, &turns(1), NOW_MS))
            .unwrap_err();
        match err {
            StoreError::OrdinalGap {
                session,
                expected: 3,
                got,
            } => {
                assert_eq!((session.as_str(), got), ("s", wrong));
            }
            other => panic!("expected OrdinalGap, got {other:?}"),
        }
    }
    let count = store
        .write(|tx| tx.append_messages(&sid("s"), 3, &turns(2), NOW_MS))
        .unwrap();
    assert_eq!(count, 5);
    // An empty append at the end is allowed and changes nothing.
    assert_eq!(
        store
            .write(|tx| tx.append_messages(&sid("s"), 5, &[], NOW_MS))
            .unwrap(),
        5
    );
    assert_eq!(store.read(|tx| tx.message_count(&sid("s"))).unwrap(), 5);

    let err = store
        .write(|tx| tx.append_messages(&sid("nobody"), 0, &turns(1), NOW_MS))
        .unwrap_err();
    assert!(matches!(err, StoreError::UnknownSession { .. }), "{err:?}");
}

#[test]
fn every_part_kind_round_trips() {
    let fixture = TempStore::new();
    let messages = every_part_kind();
    seed(&fixture.store, "s", &messages[..2], NOW_MS);
    fixture
        .store
        .write(|tx| tx.append_messages(&sid("s"), 2, &messages[2..], NOW_MS + 1))
        .unwrap();

    let chain = HashChain::of(&messages);
    let expected: Vec<StoredMessage> = messages
        .iter()
        .enumerate()
        .map(|(i, message)| StoredMessage {
            ordinal: i as u64,
            message: message.clone(),
            hash: message.content_hash(),
            chain: chain.links()[i],
            created_ms: if i < 2 { NOW_MS } else { NOW_MS + 1 },
        })
        .collect();
    assert_eq!(
        fixture.store.read(|tx| tx.messages(&sid("s"), ..)).unwrap(),
        expected
    );
    assert_eq!(
        fixture
            .store
            .read(|tx| tx.messages(&sid("s"), 1..3))
            .unwrap(),
        expected[1..3]
    );
    assert_eq!(
        fixture
            .store
            .read(|tx| tx.messages(&sid("s"), 4..=9))
            .unwrap(),
        expected[4..]
    );
    assert_eq!(
        fixture
            .store
            .read(|tx| tx.messages(&sid("nobody"), ..))
            .unwrap(),
        vec![]
    );
    assert_eq!(
        fixture.store.read(|tx| tx.chain_head(&sid("s"))).unwrap(),
        chain.head().copied()
    );
}

#[test]
fn a_chain_link_finds_the_conversation_it_prefixes() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    let conversation = turns(5);
    seed(store, "s", &conversation, NOW_MS);

    // A request resending the first three messages (and more of its own) extends "s" at 2.
    let mut request = conversation[..3].to_vec();
    request.push(text(Role::User, "a new question"));
    let links = HashChain::of(&request);
    let found = store
        .read(|tx| tx.find_by_chain(&links.links()[2]))
        .unwrap();
    assert_eq!(
        found,
        Some(ChainMatch {
            session: sid("s"),
            ordinal: 2
        })
    );
    // The diverging last message is nowhere.
    assert_eq!(
        store
            .read(|tx| tx.find_by_chain(&links.links()[3]))
            .unwrap(),
        None
    );
    // The same text at another position is a different link: position is part of identity.
    let moved = HashChain::of(&[conversation[1].clone()]);
    assert_eq!(
        store
            .read(|tx| tx.find_by_chain(&moved.links()[0]))
            .unwrap(),
        None
    );
}

#[test]
fn chain_lookup_prefers_a_session_it_ends_then_the_most_recent() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    let conversation = turns(4);
    let chain = HashChain::of(&conversation);
    seed(store, "long", &conversation, NOW_MS);
    seed(store, "short", &conversation[..2], NOW_MS - 1000);
    seed(store, "twin", &conversation, NOW_MS + 5);

    // Link 1 is the head of "short" only: it wins although it is the least recent.
    let at_one = store
        .read(|tx| tx.find_by_chain(&chain.links()[1]))
        .unwrap();
    assert_eq!(
        at_one,
        Some(ChainMatch {
            session: sid("short"),
            ordinal: 1
        })
    );
    // Link 3 ends both "long" and "twin": the more recently seen wins.
    let at_three = store
        .read(|tx| tx.find_by_chain(&chain.links()[3]))
        .unwrap();
    assert_eq!(
        at_three,
        Some(ChainMatch {
            session: sid("twin"),
            ordinal: 3
        })
    );
    // Seeing "long" again changes the answer.
    store
        .write(|tx| tx.upsert_session(&new_session("long"), NOW_MS + 10))
        .unwrap();
    let at_three = store
        .read(|tx| tx.find_by_chain(&chain.links()[3]))
        .unwrap();
    assert_eq!(
        at_three,
        Some(ChainMatch {
            session: sid("long"),
            ordinal: 3
        })
    );
}

#[test]
fn a_write_transaction_reads_its_own_writes() {
    let fixture = TempStore::new();
    let count = fixture
        .store
        .write(|tx| {
            tx.upsert_session(&new_session("s"), NOW_MS)?;
            tx.append_messages(&sid("s"), 0, &turns(2), NOW_MS)?;
            tx.message_count(&sid("s"))
        })
        .unwrap();
    assert_eq!(count, 2);
}
