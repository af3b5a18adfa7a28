//! A team's smart notes: a change lands once by its write id, the local rules hold on the
//! server (a new condition sends a due note back to wait, a note surfaces only on the
//! condition judged), and a note one machine writes is pending on another after its next
//! sync, surfaced there by its dreamer, and due on the first machine after the sync after.

use std::sync::Arc;

use mc_store::{NewNote, NoteOwner, NoteStatus, Store, TeamNoteWrite};
use mc_team_store::{TeamStoreError, TeamSync};

use crate::support::{NOW_MS, project, team_store};

#[tokio::test]
async fn note_changes_land_once_and_follow_the_local_rules() {
    let Some((team, _url)) = team_store().await else {
        return;
    };
    let p = project("p");
    let add = TeamNoteWrite::Add {
        content: "Bump the MSRV.".to_owned(),
        condition: "when Rust 1.96 is out".to_owned(),
    };
    assert!(team.apply_note("origin-1", &p, &add, NOW_MS).await.unwrap());
    assert!(!team.apply_note("origin-1", &p, &add, NOW_MS).await.unwrap());
    let head = team.changes_since(&p, 0).await.unwrap().head;
    let origin = "origin-1".to_owned();
    let surface = |condition: &str, id: &str| {
        let write = TeamNoteWrite::Surface {
            origin: origin.clone(),
            condition: condition.to_owned(),
        };
        let team = team.clone();
        let (p, id) = (p.clone(), id.to_owned());
        async move { team.apply_note(&id, &p, &write, NOW_MS + 10).await.unwrap() }
    };
    assert!(
        !surface("when Rust 1.95 is out", "s-0").await,
        "a verdict about another condition surfaces nothing"
    );
    assert!(surface("when Rust 1.96 is out", "s-1").await);
    let update = TeamNoteWrite::Update {
        origin: origin.clone(),
        content: "Bump the MSRV to 1.96.".to_owned(),
        condition: Some("when Rust 1.97 is out".to_owned()),
    };
    assert!(
        team.apply_note("u-1", &p, &update, NOW_MS + 20)
            .await
            .unwrap()
    );

    let changes = team.changes_since(&p, head).await.unwrap();
    assert_eq!(changes.notes.len(), 1);
    let note = &changes.notes[0];
    assert_eq!(
        (
            note.origin.as_str(),
            note.content.as_str(),
            note.surface_condition.as_str(),
            note.status,
            note.updated_ms
        ),
        (
            "origin-1",
            "Bump the MSRV to 1.96.",
            "when Rust 1.97 is out",
            NoteStatus::Pending,
            NOW_MS + 20
        ),
        "a new condition sends the due note back to wait"
    );
    assert!(changes.head > head);
    assert!(
        team.changes_since(&project("other"), 0)
            .await
            .unwrap()
            .notes
            .is_empty()
    );
    let stray = TeamNoteWrite::Dismiss {
        origin: "nobody".to_owned(),
    };
    let refused = team
        .apply_note("d-1", &p, &stray, NOW_MS)
        .await
        .unwrap_err();
    assert!(
        matches!(refused, TeamStoreError::UnknownNote { .. }),
        "{refused}"
    );
    assert!(!refused.is_retryable());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_smart_note_written_on_one_machine_is_surfaced_on_another_and_due_on_both() {
    let Some((team, _url)) = team_store().await else {
        return;
    };
    let p = project("p");
    let machine = || {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path().join("context.db")).unwrap());
        (dir, TeamSync::new(Arc::clone(&store), team.clone()), store)
    };
    let (_a_dir, alice, alice_store) = machine();
    let (_b_dir, bob, bob_store) = machine();
    let session = mc_core::SessionId::new("alice-session").unwrap();
    let condition = "when the CI config changes";
    let (smart, private) = alice_store
        .write(|tx| {
            let smart = tx.add_note(
                &NewNote {
                    project: Some(&p),
                    session: Some(&session),
                    content: "Re-check the cache keys.",
                    surface_condition: Some(condition),
                },
                NOW_MS,
            )?;
            let private = tx.add_note(
                &NewNote {
                    project: Some(&p),
                    session: Some(&session),
                    content: "A session note stays here.",
                    surface_condition: None,
                },
                NOW_MS,
            )?;
            let shared = tx.share_note_with_team(&p, smart, "alice-note", NOW_MS)?;
            let not_smart = tx.share_note_with_team(&p, private, "alice-other", NOW_MS)?;
            assert_eq!((shared, not_smart), (true, false));
            Ok((smart, private))
        })
        .unwrap();
    assert_eq!(alice.replay(NOW_MS + 1).await.unwrap().landed, 1);
    assert_eq!(alice_store.read(|tx| tx.team_note_queue()).unwrap(), 0);

    bob.pull(&p, NOW_MS + 2).await.unwrap();
    let pending = bob_store.read(|tx| tx.pending_smart_notes(&p)).unwrap();
    assert_eq!(
        pending.len(),
        1,
        "bob sees the smart note, not the session note"
    );
    assert_eq!(pending[0].content, "Re-check the cache keys.");
    // Bob's dreamer finds it due; the change travels with bob's next sync.
    let surfaced = bob_store
        .write(|tx| tx.surface_note(&p, pending[0].id, condition, NOW_MS + 3))
        .unwrap();
    assert!(surfaced);
    assert_eq!(bob.replay(NOW_MS + 4).await.unwrap().landed, 1);
    bob.pull(&p, NOW_MS + 5).await.unwrap();
    assert_eq!(
        bob_store.read(|tx| tx.pending_smart_notes(&p)).unwrap(),
        [],
        "pulling back its own change adds no second copy"
    );

    alice.pull(&p, NOW_MS + 6).await.unwrap();
    let owner = NoteOwner {
        session: Some(&session),
        project: Some(&p),
    };
    let seen: Vec<_> = alice_store
        .read(|tx| tx.notes(owner))
        .unwrap()
        .into_iter()
        .map(|note| (note.id, note.status))
        .collect();
    assert_eq!(
        seen,
        [(smart, NoteStatus::Active), (private, NoteStatus::Active)],
        "due on alice's machine too, under its own id"
    );
    // Alice dismisses it; bob's copy follows.
    assert!(
        alice_store
            .write(|tx| tx.dismiss_note(owner, smart, NOW_MS + 7))
            .unwrap()
    );
    alice.replay(NOW_MS + 8).await.unwrap();
    bob.pull(&p, NOW_MS + 9).await.unwrap();
    let bobs = bob_store
        .read(|tx| tx.project_note(&p, pending[0].id))
        .unwrap();
    assert_eq!(bobs.map(|note| note.status), Some(NoteStatus::Dismissed));
}
