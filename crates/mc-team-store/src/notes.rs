//! A team's smart notes in the team store: each change in one transaction under the
//! project's advisory lock, at a fresh version, recorded by its write id so a replayed change
//! lands once.
//!
//! The rules are the local ones (`mc-store`'s `notes.rs`): a new condition sends a due note
//! back to wait; a note surfaces only while it waits on the very condition that was judged
//! (an agent that rewrote it meanwhile wins); a dismissed note stays dismissed. A change to a
//! note the team store does not hold is refused ([`TeamStoreError::UnknownNote`]); it cannot
//! happen while the queue keeps its order, since a note's add is queued before any change.

use mc_core::ProjectId;
use mc_store::{NoteStatus, TeamNote, TeamNoteWrite};
use tokio_postgres::Row;

use crate::client::TeamStore;
use crate::error::{Result, TeamStoreError, postgres};
use crate::writes::Change;

/// The columns [`note_of`] reads, in order.
pub(crate) const NOTE_COLUMNS: &str =
    "origin, content, surface_condition, status, created_ms, updated_ms, version";

/// A note row and its version.
pub(crate) fn note_of(row: &Row) -> Result<(TeamNote, i64)> {
    let status: String = row.get(3);
    let note = TeamNote {
        origin: row.get(0),
        content: row.get(1),
        surface_condition: row.get(2),
        status: NoteStatus::parse(&status).ok_or(TeamStoreError::CorruptRow {
            what: "note status",
            value: status.clone(),
        })?,
        created_ms: row.get(4),
        updated_ms: row.get(5),
    };
    Ok((note, row.get(6)))
}

impl TeamStore {
    /// Applies a change to the project's smart notes once: a `write_id` seen before changes
    /// nothing. Returns whether the note changed now.
    pub async fn apply_note(
        &self,
        write_id: &str,
        project: &ProjectId,
        write: &TeamNoteWrite,
        now_ms: i64,
    ) -> Result<bool> {
        const DOING: &str = "writing a smart note";
        let mut client = self.client(DOING).await?;
        let change = Change::begin(&mut client, project, now_ms, self.redacted(), DOING).await?;
        if change.lock_and_check(write_id).await?.is_some() {
            return Ok(false);
        }
        let changed = change.note(write_id, write).await?;
        change.record_write(write_id, None).await?;
        change.commit("committing a smart note change").await?;
        Ok(changed)
    }
}

impl Change<'_> {
    async fn note(&self, write_id: &str, write: &TeamNoteWrite) -> Result<bool> {
        let project = self.project.as_str();
        let (sql, params): (&str, Vec<&(dyn tokio_postgres::types::ToSql + Sync)>) = match write {
            TeamNoteWrite::Add { content, condition } => (
                "INSERT INTO mc_notes (origin, project_id, content, surface_condition, status,
                       created_ms, updated_ms, version)
                     VALUES ($1, $2, $3, $4, 'pending', $5, $5, nextval('mc_version'))
                     ON CONFLICT (origin) DO NOTHING",
                vec![&write_id, &project, content, condition, &self.now_ms],
            ),
            TeamNoteWrite::Update {
                origin,
                content,
                condition,
            } => (
                "UPDATE mc_notes SET content = $3,
                       surface_condition = COALESCE($4, surface_condition),
                       status = CASE WHEN $4::text IS NOT NULL AND status = 'active'
                         THEN 'pending' ELSE status END,
                       updated_ms = $5, version = nextval('mc_version')
                     WHERE origin = $1 AND project_id = $2",
                vec![origin, &project, content, condition, &self.now_ms],
            ),
            TeamNoteWrite::Surface { origin, condition } => (
                "UPDATE mc_notes SET status = 'active', updated_ms = $4,
                       version = nextval('mc_version')
                     WHERE origin = $1 AND project_id = $2 AND status = 'pending'
                       AND surface_condition = $3",
                vec![origin, &project, condition, &self.now_ms],
            ),
            TeamNoteWrite::Dismiss { origin } => (
                "UPDATE mc_notes SET status = 'dismissed', updated_ms = $3,
                       version = nextval('mc_version')
                     WHERE origin = $1 AND project_id = $2 AND status <> 'dismissed'",
                vec![origin, &project, &self.now_ms],
            ),
        };
        let changed = self
            .tx
            .execute(sql, &params)
            .await
            .map_err(postgres(self.url, "changing a smart note"))?;
        if changed == 0
            && let Some(origin) = write.origin()
            && !self.has_note(origin).await?
        {
            return Err(TeamStoreError::UnknownNote {
                origin: origin.to_owned(),
            });
        }
        Ok(changed > 0)
    }

    async fn has_note(&self, origin: &str) -> Result<bool> {
        let project = self.project.as_str();
        let row = self
            .tx
            .query_opt(
                "SELECT 1 FROM mc_notes WHERE origin = $1 AND project_id = $2",
                &[&origin, &project],
            )
            .await
            .map_err(postgres(self.url, "looking up a smart note"))?;
        Ok(row.is_some())
    }
}
