//! A team's smart notes in the local `notes` table: a note of this machine only queues
//! nothing, a team note's every change is queued in its own transaction, and the team's notes
//! copied in twice are cached once, each under a local id of its own.

use mc_core::{ProjectId, SessionId};
use mc_store::{NewNote, NoteOwner, NoteStatus, TeamNote, TeamNoteWrite};

use crate::support::{NOW_MS, TempStore};

#[test]
fn only_a_team_notes_changes_are_queued_and_the_teams_notes_are_cached_once() {
    let temp = TempStore::new();
    let p = ProjectId::new("team-p").unwrap();
    let session = SessionId::new("s").unwrap();
    let owner = NoteOwner {
        session: Some(&session),
        project: Some(&p),
    };
    let smart = |content: &'static str| NewNote {
        project: Some(&p),
        session: Some(&session),
        content,
        surface_condition: Some("when the release is cut"),
    };
    let queued = temp
        .store
        .write(|tx| {
            let local = tx.add_note(&smart("Written before the team store."), NOW_MS)?;
            tx.dismiss_note(owner, local, NOW_MS + 1)?;
            let shared = tx.add_note(&smart("Tag the release notes."), NOW_MS)?;
            tx.share_note_with_team(&p, shared, "origin-a", NOW_MS)?;
            tx.update_note(owner, shared, Some("Tag the notes."), None, NOW_MS + 2)?;
            tx.surface_note(&p, shared, "when the release is cut", NOW_MS + 3)?;
            tx.queued_team_note_writes(10)
        })
        .unwrap();
    let writes: Vec<_> = queued.into_iter().map(|queued| queued.write).collect();
    assert_eq!(
        writes,
        [
            TeamNoteWrite::Add {
                content: "Tag the release notes.".to_owned(),
                condition: "when the release is cut".to_owned()
            },
            TeamNoteWrite::Update {
                origin: "origin-a".to_owned(),
                content: "Tag the notes.".to_owned(),
                condition: None
            },
            TeamNoteWrite::Surface {
                origin: "origin-a".to_owned(),
                condition: "when the release is cut".to_owned()
            },
        ]
    );

    let from_team = TeamNote {
        origin: "origin-b".to_owned(),
        content: "Re-run the benchmarks.".to_owned(),
        surface_condition: "when the allocator changes".to_owned(),
        status: NoteStatus::Pending,
        created_ms: NOW_MS,
        updated_ms: NOW_MS,
    };
    for _ in 0..2 {
        temp.store
            .write(|tx| tx.cache_team_notes(&p, std::slice::from_ref(&from_team)))
            .unwrap();
    }
    let pending = temp.store.read(|tx| tx.pending_smart_notes(&p)).unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].content, "Re-run the benchmarks.");
    assert_eq!(
        temp.store
            .read(|tx| tx.team_origin_of_note(pending[0].id))
            .unwrap()
            .as_deref(),
        Some("origin-b")
    );
    assert_eq!(
        temp.store.read(|tx| tx.team_note_queue()).unwrap(),
        3,
        "the team's own notes are not sent back"
    );
}
