//! Smart notes surfacing: only a pending note of the project, only while its condition is
//! the one that was judged, once.

use mc_core::ProjectId;
use mc_store::{NewNote, NoteOwner, NoteStatus};

use crate::support::{NOW_MS, TempStore, sid};

#[test]
fn a_pending_note_surfaces_once_and_only_with_the_condition_judged() {
    let temp = TempStore::new();
    let (mine, theirs) = (ProjectId::new("p").unwrap(), ProjectId::new("q").unwrap());
    let session = sid("s1");
    let note = |project, condition| NewNote {
        project: Some(project),
        session: None,
        content: "revisit",
        surface_condition: condition,
    };
    let (pending, surfaced) = temp
        .store
        .write(|tx| {
            tx.add_note(&note(&mine, Some("on 2026-01-01")), NOW_MS)?;
            tx.add_note(&note(&mine, Some("when CI changes")), NOW_MS)?;
            tx.add_note(&note(&theirs, Some("on 2026-01-01")), NOW_MS)?;
            tx.add_note(
                &NewNote {
                    project: Some(&mine),
                    session: Some(&session),
                    content: "a session note",
                    surface_condition: None,
                },
                NOW_MS,
            )?;
            let pending = tx.pending_smart_notes(&mine)?;
            let surfaced = [
                tx.surface_note(&mine, 1, "on 2026-01-01", NOW_MS + 1)?,
                tx.surface_note(&mine, 1, "on 2026-01-01", NOW_MS + 2)?,
                tx.surface_note(&mine, 2, "when CI config changes", NOW_MS + 1)?,
                tx.surface_note(&mine, 3, "on 2026-01-01", NOW_MS + 1)?,
                tx.surface_note(&mine, 4, "", NOW_MS + 1)?,
            ];
            Ok((pending, surfaced))
        })
        .unwrap();
    let ids: Vec<u64> = pending.iter().map(|note| note.id).collect();
    assert_eq!(ids, [1, 2], "the project's pending smart notes only");
    assert_eq!(surfaced, [true, false, false, false, false]);
    let owner = NoteOwner {
        session: None,
        project: Some(&mine),
    };
    let notes = temp.store.read(|tx| tx.notes(owner)).unwrap();
    let states: Vec<(u64, NoteStatus, i64)> = notes
        .iter()
        .map(|note| (note.id, note.status, note.updated_ms))
        .collect();
    assert_eq!(
        states,
        [
            (1, NoteStatus::Active, NOW_MS + 1),
            (2, NoteStatus::Pending, NOW_MS)
        ]
    );
}
