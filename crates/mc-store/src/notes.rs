//! Agent notes (schema v11): what `ctx_note` writes.
//!
//! A session note belongs to one session; a smart note belongs to a project and waits as
//! `pending` until the dreamer finds its condition holds and surfaces it (`active`). Reads and changes take the
//! owner they act for (session and project), and a note of another owner is reported as not
//! found: one store serves every project on the machine. With a team store, a smart note may
//! be the team's (`team_notes.rs`): a change to one here is queued for the team store in the
//! same transaction.

use mc_core::search::FtsQuery;
use mc_core::{ProjectId, SessionId};
use rusqlite::{OptionalExtension, Row};

use crate::error::{Result, StoreError};
use crate::search::SearchScope;
use crate::store::{ReadTx, WriteTx};
use crate::team_notes::TeamNoteWrite;

/// Whether a note is shown, waiting for evaluation, or retired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoteStatus {
    /// Shown when the session reads its notes.
    Active,
    /// A smart note the dreamer has not evaluated yet.
    Pending,
    /// Dismissed by the agent; kept, never shown again.
    Dismissed,
}

impl NoteStatus {
    /// The name as stored (the schema's `CHECK` lists the same names).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Pending => "pending",
            Self::Dismissed => "dismissed",
        }
    }

    /// The status of a stored name, `None` for a name this binary does not know.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Active, Self::Pending, Self::Dismissed]
            .into_iter()
            .find(|status| status.as_str() == name)
    }
}

/// A note as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredNote {
    /// The store's id; larger is newer.
    pub id: u64,
    /// The project it belongs to (always set for a smart note).
    pub project: Option<ProjectId>,
    /// The session it belongs to (a session note), or the session that wrote a smart note.
    pub session: Option<SessionId>,
    /// What it says.
    pub content: String,
    /// When a smart note should resurface; `None` for a session note.
    pub surface_condition: Option<String>,
    /// Where it stands.
    pub status: NoteStatus,
    /// When it was written, unix milliseconds.
    pub created_ms: i64,
    /// When it last changed, unix milliseconds.
    pub updated_ms: i64,
}

/// Who a note read or change acts for: a note is visible when it is this session's note, or
/// a smart note of this project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoteOwner<'a> {
    /// The asking session, if any.
    pub session: Option<&'a SessionId>,
    /// The asking project, if any.
    pub project: Option<&'a ProjectId>,
}

impl NoteOwner<'_> {
    /// Whether `note` may be read or changed by this owner.
    pub fn owns(&self, note: &StoredNote) -> bool {
        match &note.surface_condition {
            None => note
                .session
                .as_ref()
                .is_some_and(|s| Some(s) == self.session),
            Some(_) => note
                .project
                .as_ref()
                .is_some_and(|p| Some(p) == self.project),
        }
    }
}

/// A note to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewNote<'a> {
    /// Its project.
    pub project: Option<&'a ProjectId>,
    /// Its session.
    pub session: Option<&'a SessionId>,
    /// What it says; surrounding whitespace is trimmed.
    pub content: &'a str,
    /// The condition of a smart note (stored `pending`); `None` for a session note.
    pub surface_condition: Option<&'a str>,
}

const COLUMNS: &str =
    "id, project_id, session_id, content, surface_condition, status, created_ms, updated_ms";

fn note_from_row(row: &Row<'_>) -> rusqlite::Result<StoredNote> {
    let project: Option<String> = row.get(1)?;
    let session: Option<String> = row.get(2)?;
    let status: String = row.get(5)?;
    let bad = |column: usize, what: &str| {
        rusqlite::Error::FromSqlConversionFailure(
            column,
            rusqlite::types::Type::Text,
            what.to_owned().into(),
        )
    };
    Ok(StoredNote {
        id: row.get(0)?,
        project: project
            .map(ProjectId::new)
            .transpose()
            .map_err(|_| bad(1, "invalid project id"))?,
        session: session
            .map(SessionId::new)
            .transpose()
            .map_err(|_| bad(2, "invalid session id"))?,
        content: row.get(3)?,
        surface_condition: row.get(4)?,
        status: NoteStatus::parse(&status).ok_or_else(|| bad(5, "unknown note status"))?,
        created_ms: row.get(6)?,
        updated_ms: row.get(7)?,
    })
}

impl ReadTx<'_> {
    /// The notes `owner` sees that are not dismissed, oldest first: its session's notes and
    /// its project's smart notes.
    pub fn notes(&self, owner: NoteOwner<'_>) -> Result<Vec<StoredNote>> {
        const DOING: &str = "reading notes";
        let mut statement = self
            .conn()
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM notes WHERE status != 'dismissed'
                 AND ((surface_condition IS NULL AND session_id = ?1)
                   OR (surface_condition IS NOT NULL AND project_id = ?2))
                 ORDER BY id"
            ))
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map(
                rusqlite::params![
                    owner.session.map(SessionId::as_str),
                    owner.project.map(ProjectId::as_str)
                ],
                note_from_row,
            )
            .map_err(StoreError::sqlite(DOING))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(StoreError::sqlite(DOING))
    }

    /// The project's smart notes still waiting for their condition, oldest first.
    pub fn pending_smart_notes(&self, project: &ProjectId) -> Result<Vec<StoredNote>> {
        const DOING: &str = "reading pending smart notes";
        let mut statement = self
            .conn()
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM notes WHERE project_id = ?1 AND status = 'pending'
                   AND surface_condition IS NOT NULL ORDER BY id"
            ))
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([project.as_str()], note_from_row)
            .map_err(StoreError::sqlite(DOING))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(StoreError::sqlite(DOING))
    }

    /// Note `id` if `owner` may see it (dismissed ones included), else `None`.
    pub fn note(&self, owner: NoteOwner<'_>, id: u64) -> Result<Option<StoredNote>> {
        let note = self
            .conn()
            .prepare_cached(&format!("SELECT {COLUMNS} FROM notes WHERE id = ?1"))
            .and_then(|mut statement| statement.query_row([id], note_from_row).optional())
            .map_err(StoreError::sqlite("reading a note"))?;
        Ok(note.filter(|note| owner.owns(note)))
    }
}

/// A note that matched a full-text query.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteHit {
    /// The note's id.
    pub id: u64,
    /// Negated BM25, higher is better.
    pub score: f64,
}

impl ReadTx<'_> {
    /// Note `id` when it belongs to `project`, whatever its session: what a project-wide
    /// search may show.
    pub fn project_note(&self, project: &ProjectId, id: u64) -> Result<Option<StoredNote>> {
        self.conn()
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM notes WHERE id = ?1 AND project_id = ?2"
            ))
            .and_then(|mut statement| {
                statement
                    .query_row(rusqlite::params![id, project.as_str()], note_from_row)
                    .optional()
            })
            .map_err(StoreError::sqlite("reading a note"))
    }

    /// Up to `limit` open notes of `project` matching `query` within `scope`'s time window,
    /// best first.
    pub fn search_notes(
        &self,
        query: &FtsQuery,
        project: &ProjectId,
        scope: &SearchScope,
        limit: u32,
    ) -> Result<Vec<NoteHit>> {
        let hits = self.project_fts_hits(
            "SELECT n.id, -bm25(note_search) AS score
             FROM note_search JOIN notes n ON n.id = note_search.rowid
             WHERE note_search MATCH ?1 AND n.project_id = ?2 AND n.status <> 'dismissed'
               AND n.updated_ms >= ?3 AND n.updated_ms < ?4
             ORDER BY score DESC, n.id
             LIMIT ?5",
            "searching notes",
            query,
            project,
            scope,
            limit,
        )?;
        Ok(hits
            .into_iter()
            .map(|(id, score)| NoteHit { id, score })
            .collect())
    }
}

impl WriteTx<'_> {
    /// Stores a note; a smart note (with a condition) is stored `pending`. Returns its id.
    pub fn add_note(&self, note: &NewNote<'_>, now_ms: i64) -> Result<u64> {
        let status = match note.surface_condition {
            Some(_) => NoteStatus::Pending,
            None => NoteStatus::Active,
        };
        self.conn()
            .prepare_cached(
                "INSERT INTO notes (project_id, session_id, content, surface_condition, status,
                                    created_ms, updated_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
            )
            .and_then(|mut statement| {
                statement.execute(rusqlite::params![
                    note.project.map(ProjectId::as_str),
                    note.session.map(SessionId::as_str),
                    note.content.trim(),
                    note.surface_condition.map(str::trim),
                    status.as_str(),
                    now_ms
                ])
            })
            .map_err(StoreError::sqlite("writing a note"))?;
        // SQLite row ids of an `INTEGER PRIMARY KEY` start at 1 and only grow.
        Ok(self.conn().last_insert_rowid().unsigned_abs())
    }

    /// Rewrites note `id`'s content (and a smart note's condition, which sends it back to
    /// `pending` for the dreamer to evaluate again). `false` when `owner` has no such note.
    pub fn update_note(
        &self,
        owner: NoteOwner<'_>,
        id: u64,
        content: Option<&str>,
        surface_condition: Option<&str>,
        now_ms: i64,
    ) -> Result<bool> {
        let Some(note) = self.note(owner, id)? else {
            return Ok(false);
        };
        let condition = match (&note.surface_condition, surface_condition) {
            (Some(_), Some(new)) => Some(new.trim().to_owned()),
            (old, _) => old.clone(),
        };
        let status = match (&note.surface_condition, surface_condition, note.status) {
            (Some(_), Some(_), NoteStatus::Active) => NoteStatus::Pending,
            (_, _, status) => status,
        };
        self.conn()
            .prepare_cached(
                "UPDATE notes SET content = ?2, surface_condition = ?3, status = ?4,
                                  updated_ms = ?5 WHERE id = ?1",
            )
            .and_then(|mut statement| {
                statement.execute(rusqlite::params![
                    id,
                    content.map_or(note.content.as_str(), str::trim),
                    condition,
                    status.as_str(),
                    now_ms
                ])
            })
            .map_err(StoreError::sqlite("updating a note"))?;
        if let (Some(origin), Some(project)) = (self.team_origin_of_note(id)?, &note.project) {
            let write = TeamNoteWrite::Update {
                origin,
                content: content.map_or(note.content.as_str(), str::trim).to_owned(),
                condition: surface_condition.and(condition),
            };
            self.queue_team_note(project, &write, now_ms)?;
        }
        Ok(true)
    }

    /// Marks the project's pending smart note `id` as surfaced (`active`), so the head lists
    /// it at its next rebuild and `ctx_note read` shows it as due. Only while its condition is
    /// still `condition`, the one that was judged: an agent that rewrote it meanwhile sent it
    /// back to be judged again. Returns whether the note surfaced.
    pub fn surface_note(
        &self,
        project: &ProjectId,
        id: u64,
        condition: &str,
        now_ms: i64,
    ) -> Result<bool> {
        let changed = self
            .conn()
            .prepare_cached(
                "UPDATE notes SET status = 'active', updated_ms = ?4
                 WHERE id = ?1 AND project_id = ?2 AND status = 'pending'
                   AND surface_condition = ?3",
            )
            .and_then(|mut statement| {
                statement.execute(rusqlite::params![id, project.as_str(), condition, now_ms])
            })
            .map_err(StoreError::sqlite("surfacing a smart note"))?;
        if changed > 0
            && let Some(origin) = self.team_origin_of_note(id)?
        {
            let write = TeamNoteWrite::Surface {
                origin,
                condition: condition.to_owned(),
            };
            self.queue_team_note(project, &write, now_ms)?;
        }
        Ok(changed > 0)
    }

    /// Dismisses note `id`; `false` when `owner` has no such note.
    pub fn dismiss_note(&self, owner: NoteOwner<'_>, id: u64, now_ms: i64) -> Result<bool> {
        let Some(note) = self.note(owner, id)? else {
            return Ok(false);
        };
        self.conn()
            .prepare_cached("UPDATE notes SET status = 'dismissed', updated_ms = ?2 WHERE id = ?1")
            .and_then(|mut statement| statement.execute(rusqlite::params![id, now_ms]))
            .map_err(StoreError::sqlite("dismissing a note"))?;
        if let (Some(origin), Some(project)) = (self.team_origin_of_note(id)?, &note.project) {
            self.queue_team_note(project, &TeamNoteWrite::Dismiss { origin }, now_ms)?;
        }
        Ok(true)
    }
}
