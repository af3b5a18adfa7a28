//! A rebuild's staging area: staged compartments sit beside the history until they cover
//! as much, then replace it in one transaction; an interrupted rebuild resumes from its
//! staged end, even in a new process.

use mc_core::head::Compartment;
use mc_store::{Store, StoreError, Swapped};

use crate::support::{NOW_MS, TempStore, compartment, seed, sid, turns};

/// A session of 30 messages whose history covers 0..=20 in two compartments.
fn summarised() -> TempStore {
    let temp = TempStore::new();
    seed(&temp.store, "s", &turns(30), NOW_MS);
    temp.store
        .write(|tx| {
            tx.append_compartments(
                &sid("s"),
                &[compartment(0, 9, "old a"), compartment(10, 20, "old b")],
                NOW_MS,
            )
        })
        .unwrap();
    temp
}

fn shelves(store: &Store) -> (Vec<Compartment>, Vec<Compartment>) {
    store
        .read(|tx| {
            Ok((
                tx.compartments(&sid("s"))?,
                tx.staged_compartments(&sid("s"))?,
            ))
        })
        .unwrap()
}

#[test]
fn staged_compartments_replace_the_history_only_once_they_reach_its_end() {
    let temp = summarised();
    let store = &temp.store;
    let session = sid("s");
    store
        .write(|tx| tx.stage_compartments(&session, &[compartment(0, 14, "new a")], NOW_MS))
        .unwrap();
    let error = store
        .write(|tx| tx.swap_staged_compartments(&session))
        .unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::RebuildIncomplete {
                staged_until: 15,
                needed: 21,
                ..
            }
        ),
        "{error}"
    );
    let (history, staged) = shelves(store);
    assert_eq!(
        history,
        [compartment(0, 9, "old a"), compartment(10, 20, "old b")]
    );
    assert_eq!(staged, [compartment(0, 14, "new a")]);

    store
        .write(|tx| tx.stage_compartments(&session, &[compartment(15, 20, "new b")], NOW_MS))
        .unwrap();
    let swapped = store
        .write(|tx| tx.swap_staged_compartments(&session))
        .unwrap();
    assert_eq!(
        swapped,
        Swapped {
            replaced: 2,
            installed: 2,
            covered_until: 21
        }
    );
    let (history, staged) = shelves(store);
    assert_eq!(
        history,
        [compartment(0, 14, "new a"), compartment(15, 20, "new b")]
    );
    assert!(staged.is_empty());
    let until = store.read(|tx| tx.summarised_until(&session)).unwrap();
    assert_eq!(until, 21);
}

#[test]
fn a_swap_rolled_back_with_its_transaction_leaves_both_sets_as_they_were() {
    let temp = summarised();
    let store = &temp.store;
    let session = sid("s");
    let rebuilt = [compartment(0, 4, "new a"), compartment(5, 20, "new b")];
    store
        .write(|tx| tx.stage_compartments(&session, &rebuilt, NOW_MS))
        .unwrap();
    let failed: Result<(), StoreError> = store.write(|tx| {
        let swapped = tx.swap_staged_compartments(&session)?;
        assert_eq!(swapped.installed, 2);
        assert_eq!(tx.compartments(&session)?, rebuilt);
        // Whatever fails after the swap in the same transaction undoes it.
        Err(StoreError::UnknownSession {
            session: sid("other"),
        })
    });
    assert!(failed.is_err());
    let (history, staged) = shelves(store);
    assert_eq!(
        history,
        [compartment(0, 9, "old a"), compartment(10, 20, "old b")]
    );
    assert_eq!(staged, rebuilt);
}

#[test]
fn an_interrupted_rebuild_resumes_from_its_staged_end_in_a_new_process() {
    let temp = summarised();
    let session = sid("s");
    temp.store
        .write(|tx| tx.stage_compartments(&session, &[compartment(0, 7, "new a")], NOW_MS))
        .unwrap();
    let path = temp.path();
    drop(temp.store);

    let store = Store::open(&path).unwrap();
    assert_eq!(store.read(|tx| tx.staged_until(&session)).unwrap(), 8);
    // Staging again from 0 would overlap what is staged: refused whole.
    let error = store
        .write(|tx| tx.stage_compartments(&session, &[compartment(0, 20, "again")], NOW_MS))
        .unwrap_err();
    assert!(
        matches!(error, StoreError::CompartmentGap { .. }),
        "{error}"
    );
    // Meanwhile the background historian extends the history in use: the rebuild must now
    // reach its new end.
    store
        .write(|tx| tx.append_compartments(&session, &[compartment(21, 25, "old c")], NOW_MS))
        .unwrap();
    store
        .write(|tx| tx.stage_compartments(&session, &[compartment(8, 20, "new b")], NOW_MS))
        .unwrap();
    assert!(matches!(
        store.write(|tx| tx.swap_staged_compartments(&session)),
        Err(StoreError::RebuildIncomplete { needed: 26, .. })
    ));
    store
        .write(|tx| tx.stage_compartments(&session, &[compartment(21, 25, "new c")], NOW_MS))
        .unwrap();
    let swapped = store
        .write(|tx| tx.swap_staged_compartments(&session))
        .unwrap();
    assert_eq!((swapped.replaced, swapped.installed), (3, 3));
    let (history, staged) = shelves(&store);
    let titles: Vec<&str> = history.iter().map(|c| c.title.as_str()).collect();
    assert_eq!(titles, ["new a", "new b", "new c"]);
    assert!(staged.is_empty());
}

#[test]
fn nothing_staged_is_never_swapped_in() {
    let temp = TempStore::new();
    seed(&temp.store, "s", &turns(4), NOW_MS);
    let error = temp
        .store
        .write(|tx| tx.swap_staged_compartments(&sid("s")))
        .unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::RebuildIncomplete {
                staged_until: 0,
                needed: 0,
                ..
            }
        ),
        "{error}"
    );
}
