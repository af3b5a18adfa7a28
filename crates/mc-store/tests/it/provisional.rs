//! The provisional compartment: the last one, published before its episode was seen to end,
//! replaced whole by the run that reads its range again; a rebuild's swap settles it.

use mc_store::StoreError;

use crate::support::{NOW_MS, TempStore, compartment, seed, sid, turns};

/// A session of 40 messages whose history is 0..=9 and a provisional 10..=15.
fn with_provisional() -> TempStore {
    let temp = TempStore::new();
    seed(&temp.store, "s", &turns(40), NOW_MS);
    temp.store
        .write(|tx| {
            tx.append_compartments(
                &sid("s"),
                &[compartment(0, 9, "done"), compartment(10, 15, "so far")],
                NOW_MS,
            )?;
            tx.mark_provisional(&sid("s"), 10)
        })
        .unwrap();
    temp
}

#[test]
fn a_provisional_compartment_counts_as_history_until_its_rereading_replaces_it() {
    let temp = with_provisional();
    let (store, session) = (&temp.store, sid("s"));
    let read = |store: &mc_store::Store| {
        store
            .read(|tx| {
                Ok((
                    tx.summarised_until(&session)?,
                    tx.provisional_start(&session)?,
                    tx.compartments(&session)?,
                ))
            })
            .unwrap()
    };
    let (until, provisional, history) = read(store);
    assert_eq!((until, provisional), (16, Some(10)));
    assert_eq!(history.len(), 2);

    // The re-read covers 10..=24 in two compartments, the last provisional again.
    store
        .write(|tx| {
            assert_eq!(tx.reopen_provisional(&session)?, Some(10));
            assert_eq!(tx.summarised_until(&session)?, 10);
            tx.append_compartments(
                &session,
                &[
                    compartment(10, 18, "ended"),
                    compartment(19, 24, "next so far"),
                ],
                NOW_MS,
            )?;
            tx.mark_provisional(&session, 19)
        })
        .unwrap();
    let (until, provisional, history) = read(store);
    assert_eq!((until, provisional), (25, Some(19)));
    assert_eq!(
        history,
        [
            compartment(0, 9, "done"),
            compartment(10, 18, "ended"),
            compartment(19, 24, "next so far")
        ]
    );
    // `m[1]`'s delta from an old boundary inside the replaced range still finds it.
    let from_inside = store.read(|tx| tx.compartments_from(&session, 16)).unwrap();
    assert_eq!(from_inside[0].title, "ended");

    // A confirmed re-read settles it.
    store
        .write(|tx| {
            tx.reopen_provisional(&session)?;
            tx.append_compartments(&session, &[compartment(19, 30, "finished")], NOW_MS)
        })
        .unwrap();
    let (until, provisional, _) = read(store);
    assert_eq!((until, provisional), (31, None));
    assert_eq!(
        store.write(|tx| tx.reopen_provisional(&session)).unwrap(),
        None
    );
}

#[test]
fn only_the_last_compartment_can_be_provisional_and_a_failed_write_keeps_the_old_one() {
    let temp = with_provisional();
    let (store, session) = (&temp.store, sid("s"));
    let error = store
        .write(|tx| tx.mark_provisional(&session, 0))
        .unwrap_err();
    assert!(
        matches!(error, StoreError::CompartmentGap { .. }),
        "{error}"
    );
    // A replacement that does not continue the history is refused, and the transaction
    // leaves the provisional compartment and its mark as they were.
    let error = store
        .write(|tx| {
            tx.reopen_provisional(&session)?;
            tx.append_compartments(&session, &[compartment(12, 20, "gap")], NOW_MS)
        })
        .unwrap_err();
    assert!(
        matches!(error, StoreError::CompartmentGap { .. }),
        "{error}"
    );
    let (until, provisional) = store
        .read(|tx| {
            Ok((
                tx.summarised_until(&session)?,
                tx.provisional_start(&session)?,
            ))
        })
        .unwrap();
    assert_eq!((until, provisional), (16, Some(10)));
}

#[test]
fn a_rebuild_swap_settles_the_provisional_compartment() {
    let temp = with_provisional();
    let (store, session) = (&temp.store, sid("s"));
    store
        .write(|tx| {
            tx.stage_compartments(&session, &[compartment(0, 20, "rebuilt")], NOW_MS)?;
            tx.swap_staged_compartments(&session)
        })
        .unwrap();
    let provisional = store.read(|tx| tx.provisional_start(&session)).unwrap();
    assert_eq!(provisional, None);
}
