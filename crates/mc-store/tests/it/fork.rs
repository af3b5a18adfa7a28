//! Forks copy their parent's prefix and continue on their own.

use mc_core::{HashChain, Host, ProjectId, Role, SessionMode};
use mc_store::{ChainMatch, ForkPoint, SessionRecord, StoreError};

use crate::support::{NOW_MS, TempStore, seed, sid, text, turns};

#[test]
fn a_fork_copies_the_prefix_and_continues_its_own_chain() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    let parent = turns(5);
    seed(store, "parent", &parent, NOW_MS);

    let fork = store
        .write(|tx| tx.fork_session(&sid("parent"), &sid("branch"), 3, NOW_MS + 50))
        .unwrap();
    assert_eq!(
        fork,
        SessionRecord {
            id: sid("branch"),
            host: Host::ClaudeCode,
            project: Some(ProjectId::new("proj").unwrap()),
            fork: Some(ForkPoint {
                parent: sid("parent"),
                ordinal: 3
            }),
            created_ms: NOW_MS + 50,
            last_seen_ms: NOW_MS + 50,
            mode: SessionMode::Primary,
            spawned_by: None,
        }
    );

    // The copied rows are the parent's, timestamps included.
    let copied = store.read(|tx| tx.messages(&sid("branch"), ..)).unwrap();
    let original = store.read(|tx| tx.messages(&sid("parent"), ..3)).unwrap();
    assert_eq!(copied, original);

    // The branch continues with an edited fourth message; its chain is the chain of the edit.
    let edited = text(Role::User, "turn 3, rephrased");
    store
        .write(|tx| {
            tx.append_messages(
                &sid("branch"),
                3,
                std::slice::from_ref(&edited),
                NOW_MS + 60,
            )
        })
        .unwrap();
    let mut branch = parent[..3].to_vec();
    branch.push(edited);
    let chain = HashChain::of(&branch);
    assert_eq!(
        store.read(|tx| tx.chain_head(&sid("branch"))).unwrap(),
        chain.head().copied()
    );
    let found = store
        .read(|tx| tx.find_by_chain(&chain.links()[3]))
        .unwrap();
    assert_eq!(
        found,
        Some(ChainMatch {
            session: sid("branch"),
            ordinal: 3
        })
    );

    // The parent is untouched.
    assert_eq!(
        store.read(|tx| tx.message_count(&sid("parent"))).unwrap(),
        5
    );
    let parent_head = HashChain::of(&parent).head().copied();
    assert_eq!(
        store.read(|tx| tx.chain_head(&sid("parent"))).unwrap(),
        parent_head
    );
}

#[test]
fn fork_limits() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    seed(store, "parent", &turns(2), NOW_MS);
    seed(store, "taken", &[], NOW_MS);

    let err = store
        .write(|tx| tx.fork_session(&sid("parent"), &sid("b"), 3, NOW_MS))
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::ForkBeyondEnd {
                at: 3,
                count: 2,
                ..
            }
        ),
        "{err:?}"
    );
    let err = store
        .write(|tx| tx.fork_session(&sid("parent"), &sid("taken"), 1, NOW_MS))
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::SessionExists { session } if session.as_str() == "taken"),
        "{err:?}"
    );
    let err = store
        .write(|tx| tx.fork_session(&sid("nobody"), &sid("b"), 0, NOW_MS))
        .unwrap_err();
    assert!(matches!(err, StoreError::UnknownSession { .. }), "{err:?}");

    // Forks at both ends are fine.
    store
        .write(|tx| tx.fork_session(&sid("parent"), &sid("empty"), 0, NOW_MS))
        .unwrap();
    store
        .write(|tx| tx.fork_session(&sid("parent"), &sid("whole"), 2, NOW_MS))
        .unwrap();
    assert_eq!(store.read(|tx| tx.message_count(&sid("empty"))).unwrap(), 0);
    assert_eq!(store.read(|tx| tx.message_count(&sid("whole"))).unwrap(), 2);
    // A fork of a fork records its own parent.
    let grandchild = store
        .write(|tx| tx.fork_session(&sid("whole"), &sid("g"), 1, NOW_MS))
        .unwrap();
    assert_eq!(
        grandchild.fork,
        Some(ForkPoint {
            parent: sid("whole"),
            ordinal: 1
        })
    );
}
