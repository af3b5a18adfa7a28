//! A team's smart notes in this store (schema v28): the local `notes` table caches them, and
//! every change to one is queued for the team store in the transaction that makes it.
//!
//! A smart note belongs to the project, so with a team store it is the team's: a note one
//! agent leaves resurfaces in a colleague's session once its condition holds. Unlike memories,
//! the team's notes are kept in the local `notes` table itself, each row naming its team note
//! by `team_origin` (the write id of the change that added it): every reader of notes (the
//! head, `ctx_note read`, search, the dreamer) reads them as before, with local ids that never
//! collide with this machine's session notes, and a change made through any of them to a team
//! note (update, dismiss, surface) queues that change here, in its own transaction, for the
//! sync to send ([`WriteTx::queue_team_note`]). The sync copies the team's notes back by
//! version cursor ([`WriteTx::cache_team_notes`]). Session notes, and smart notes written
//! before a team store was set (no `team_origin`), stay on the machine.

use mc_core::ProjectId;
use rusqlite::OptionalExtension;
use rusqlite::types::Type;

use crate::error::{Result, StoreError};
use crate::notes::NoteStatus;
use crate::store::{ReadTx, WriteTx};
use crate::team_outbox::project_of;

/// A change to a team's smart note, as queued and as sent to the team store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TeamNoteWrite {
    /// A new smart note; its write id becomes its origin, its name across the team.
    Add {
        /// What it says.
        content: String,
        /// When it should resurface.
        condition: String,
    },
    /// New wording, and a new condition when given (which sends a due note back to wait).
    Update {
        /// The note.
        origin: String,
        /// Its text now.
        content: String,
        /// Its new condition, if it changed.
        condition: Option<String>,
    },
    /// The dreamer found its condition holds: due, while it still waits on that condition.
    Surface {
        /// The note.
        origin: String,
        /// The condition that was judged.
        condition: String,
    },
    /// Retired by the agent.
    Dismiss {
        /// The note.
        origin: String,
    },
}

impl TeamNoteWrite {
    fn kind(&self) -> &'static str {
        match self {
            Self::Add { .. } => "add",
            Self::Update { .. } => "update",
            Self::Surface { .. } => "surface",
            Self::Dismiss { .. } => "dismiss",
        }
    }

    /// The note it changes (`None` for an add, whose write id names it).
    pub fn origin(&self) -> Option<&str> {
        match self {
            Self::Add { .. } => None,
            Self::Update { origin, .. }
            | Self::Surface { origin, .. }
            | Self::Dismiss { origin } => Some(origin),
        }
    }

    /// Its text and condition columns.
    fn texts(&self) -> (Option<&str>, Option<&str>) {
        match self {
            Self::Add { content, condition } => (Some(content), Some(condition)),
            Self::Update {
                content, condition, ..
            } => (Some(content), condition.as_deref()),
            Self::Surface { condition, .. } => (None, Some(condition)),
            Self::Dismiss { .. } => (None, None),
        }
    }
}

/// A queued change to a team's smart note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedTeamNoteWrite {
    /// The id the server deduplicates by (an add's is the note's origin).
    pub write_id: String,
    /// The project the note belongs to.
    pub project: ProjectId,
    /// The change.
    pub write: TeamNoteWrite,
}

/// A team's smart note as the team store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamNote {
    /// Its name across the team.
    pub origin: String,
    /// What it says.
    pub content: String,
    /// When it should resurface.
    pub surface_condition: String,
    /// Where it stands.
    pub status: NoteStatus,
    /// When it was written, unix milliseconds.
    pub created_ms: i64,
    /// When it last changed, unix milliseconds.
    pub updated_ms: i64,
}

/// The write id of a change to an existing team note made at `now_ms`: derived from what it
/// is, so the same change queued twice (a retried transaction) is sent as one.
fn change_id(project: &ProjectId, write: &TeamNoteWrite, now_ms: i64) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"mc-team-note-v1\0");
    let (content, condition) = write.texts();
    for part in [
        project.as_str(),
        write.kind(),
        write.origin().unwrap_or_default(),
        content.unwrap_or_default(),
        condition.unwrap_or_default(),
    ] {
        hasher.update(part.as_bytes());
        hasher.update(b"\0");
    }
    hasher.update(&now_ms.to_le_bytes());
    format!("note-{}", &hasher.finalize().to_hex()[..32])
}

impl ReadTx<'_> {
    /// The team note local note `id` caches, by its origin; `None` for a note of this
    /// machine only.
    pub fn team_origin_of_note(&self, id: u64) -> Result<Option<String>> {
        self.conn()
            .prepare_cached("SELECT team_origin FROM notes WHERE id = ?1")
            .and_then(|mut statement| {
                statement
                    .query_row([id], |row| row.get::<_, Option<String>>(0))
                    .optional()
            })
            .map(Option::flatten)
            .map_err(StoreError::sqlite("reading a note's team origin"))
    }

    /// Up to `limit` queued changes to team notes, oldest first.
    pub fn queued_team_note_writes(&self, limit: u32) -> Result<Vec<QueuedTeamNoteWrite>> {
        const DOING: &str = "reading queued team note changes";
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT write_id, project_id, kind, origin, content, surface_condition
                 FROM team_note_outbox ORDER BY seq LIMIT ?1",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([limit], |row| {
                let project = project_of(row, 1)?;
                let kind: String = row.get(2)?;
                let origin: Option<String> = row.get(3)?;
                let content: Option<String> = row.get(4)?;
                let condition: Option<String> = row.get(5)?;
                let missing = || rusqlite::Error::InvalidColumnType(3, kind.clone(), Type::Null);
                let write = match kind.as_str() {
                    "add" => TeamNoteWrite::Add {
                        content: content.ok_or_else(missing)?,
                        condition: condition.ok_or_else(missing)?,
                    },
                    "update" => TeamNoteWrite::Update {
                        origin: origin.ok_or_else(missing)?,
                        content: content.ok_or_else(missing)?,
                        condition,
                    },
                    "surface" => TeamNoteWrite::Surface {
                        origin: origin.ok_or_else(missing)?,
                        condition: condition.ok_or_else(missing)?,
                    },
                    _ => TeamNoteWrite::Dismiss {
                        origin: origin.ok_or_else(missing)?,
                    },
                };
                Ok(QueuedTeamNoteWrite {
                    write_id: row.get(0)?,
                    project,
                    write,
                })
            })
            .map_err(StoreError::sqlite(DOING))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(StoreError::sqlite(DOING))
    }

    /// How many changes to team notes wait to be sent.
    pub fn team_note_queue(&self) -> Result<u64> {
        self.conn()
            .prepare_cached("SELECT COUNT(*) FROM team_note_outbox")
            .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
            .map_err(StoreError::sqlite("counting queued team note changes"))
    }
}

impl WriteTx<'_> {
    /// Makes the project's smart note `id`, just written here, the team's: it takes `origin`
    /// (a fresh write id) as its name and its add is queued for the team store. A session
    /// note is not the team's and is left alone; returns whether the note was shared.
    pub fn share_note_with_team(
        &self,
        project: &ProjectId,
        id: u64,
        origin: &str,
        now_ms: i64,
    ) -> Result<bool> {
        let note: Option<(String, String)> = self
            .conn()
            .prepare_cached(
                "UPDATE notes SET team_origin = ?3
                 WHERE id = ?1 AND project_id = ?2 AND surface_condition IS NOT NULL
                   AND team_origin IS NULL
                 RETURNING content, surface_condition",
            )
            .and_then(|mut statement| {
                statement
                    .query_row(rusqlite::params![id, project.as_str(), origin], |row| {
                        Ok((row.get(0)?, row.get(1)?))
                    })
                    .optional()
            })
            .map_err(StoreError::sqlite("sharing a smart note with the team"))?;
        let Some((content, condition)) = note else {
            return Ok(false);
        };
        let write = TeamNoteWrite::Add { content, condition };
        self.enqueue_note(origin, project, &write, now_ms)?;
        Ok(true)
    }

    /// Queues `write`, a change to a team note, for the team store.
    pub(crate) fn queue_team_note(
        &self,
        project: &ProjectId,
        write: &TeamNoteWrite,
        now_ms: i64,
    ) -> Result<()> {
        self.enqueue_note(&change_id(project, write, now_ms), project, write, now_ms)
    }

    fn enqueue_note(
        &self,
        write_id: &str,
        project: &ProjectId,
        write: &TeamNoteWrite,
        now_ms: i64,
    ) -> Result<()> {
        let (content, condition) = write.texts();
        self.conn()
            .prepare_cached(
                "INSERT OR IGNORE INTO team_note_outbox (write_id, project_id, kind, origin,
                   content, surface_condition, queued_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .and_then(|mut statement| {
                statement.execute(rusqlite::params![
                    write_id,
                    project.as_str(),
                    write.kind(),
                    write.origin(),
                    content,
                    condition,
                    now_ms
                ])
            })
            .map(|_| ())
            .map_err(StoreError::sqlite("queuing a team note change"))
    }

    /// Removes a change the server answered.
    pub fn forget_team_note_write(&self, write_id: &str) -> Result<()> {
        self.conn()
            .prepare_cached("DELETE FROM team_note_outbox WHERE write_id = ?1")
            .and_then(|mut statement| statement.execute([write_id]))
            .map(|_| ())
            .map_err(StoreError::sqlite("forgetting a team note change"))
    }

    /// Copies the team's notes of the project, as the team store holds them now, into the
    /// local table: a note cached before takes the team's text, condition and status, a new
    /// one is added (with a local id of its own). Copying twice changes nothing more.
    pub fn cache_team_notes(&self, project: &ProjectId, notes: &[TeamNote]) -> Result<()> {
        const DOING: &str = "caching the team's smart notes";
        let conn = self.conn();
        let mut update = conn
            .prepare_cached(
                "UPDATE notes SET content = ?2, surface_condition = ?3, status = ?4,
                   updated_ms = ?5
                 WHERE team_origin = ?1 AND (content, surface_condition, status, updated_ms)
                   IS NOT (?2, ?3, ?4, ?5)",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let mut insert = conn
            .prepare_cached(
                "INSERT INTO notes (project_id, content, surface_condition, status, created_ms,
                   updated_ms, team_origin)
                 SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7
                 WHERE NOT EXISTS (SELECT 1 FROM notes WHERE team_origin = ?7)",
            )
            .map_err(StoreError::sqlite(DOING))?;
        for note in notes {
            update
                .execute(rusqlite::params![
                    note.origin,
                    note.content,
                    note.surface_condition,
                    note.status.as_str(),
                    note.updated_ms
                ])
                .map_err(StoreError::sqlite(DOING))?;
            insert
                .execute(rusqlite::params![
                    project.as_str(),
                    note.content,
                    note.surface_condition,
                    note.status.as_str(),
                    note.created_ms,
                    note.updated_ms,
                    note.origin
                ])
                .map_err(StoreError::sqlite(DOING))?;
        }
        Ok(())
    }
}
