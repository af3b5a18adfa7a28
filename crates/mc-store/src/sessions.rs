//! The sessions repository: one row per conversation the proxy has seen.

use mc_core::{Host, ProjectId, SessionId, SessionMode};
use rusqlite::{OptionalExtension, Row};

use crate::error::{Result, RowProblem, StoreError};
use crate::store::{ReadTx, WriteTx};

/// What the proxy knows about a session when it meets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    /// The session's id.
    pub id: SessionId,
    /// The client driving it.
    pub host: Host,
    /// The project it works in, when known.
    pub project: Option<ProjectId>,
}

/// Where a forked session branched off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkPoint {
    /// The session it branched from.
    pub parent: SessionId,
    /// How many of the parent's messages it starts with (copied into it).
    pub ordinal: u64,
}

/// A stored session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    /// The session's id.
    pub id: SessionId,
    /// The client that created it.
    pub host: Host,
    /// Its project, when known.
    pub project: Option<ProjectId>,
    /// Where it branched off another session, if it is a fork.
    pub fork: Option<ForkPoint>,
    /// When it was created, unix milliseconds.
    pub created_ms: i64,
    /// When a request last used it, unix milliseconds.
    pub last_seen_ms: i64,
    /// How the engine last treated it.
    pub mode: SessionMode,
    /// The primary session a subagent works for, when it is one.
    pub spawned_by: Option<SessionId>,
}

const SESSION_COLUMNS: &str =
    "id, host, project, parent_id, fork_ordinal, created_ms, last_seen_ms, mode, spawned_by";

/// A session row as SQLite returns it, before validation.
pub(crate) struct SessionRow {
    pub(crate) id: String,
    host: String,
    project: Option<String>,
    pub(crate) parent_id: Option<String>,
    fork_ordinal: Option<u64>,
    created_ms: i64,
    last_seen_ms: i64,
    mode: String,
    spawned_by: Option<String>,
}

impl SessionRow {
    /// Reads the [`SESSION_COLUMNS`] at the start of a row.
    pub(crate) fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            host: row.get(1)?,
            project: row.get(2)?,
            parent_id: row.get(3)?,
            fork_ordinal: row.get(4)?,
            created_ms: row.get(5)?,
            last_seen_ms: row.get(6)?,
            mode: row.get(7)?,
            spawned_by: row.get(8)?,
        })
    }

    pub(crate) fn decode(self) -> Result<SessionRecord> {
        let corrupt = |id: &str, problem| StoreError::CorruptSession {
            id: id.to_string(),
            problem,
        };
        let id = SessionId::new(self.id.as_str())
            .map_err(|err| corrupt(&self.id, RowProblem::Id(err)))?;
        let project = self
            .project
            .map(ProjectId::new)
            .transpose()
            .map_err(|err| corrupt(&self.id, RowProblem::Id(err)))?;
        let fork = match (self.parent_id, self.fork_ordinal) {
            (Some(parent), Some(ordinal)) => Some(ForkPoint {
                parent: SessionId::new(parent)
                    .map_err(|err| corrupt(&self.id, RowProblem::Id(err)))?,
                ordinal,
            }),
            // The schema's CHECK keeps the two columns NULL together.
            _ => None,
        };
        let mode = SessionMode::from_name(&self.mode)
            .ok_or_else(|| corrupt(&self.id, RowProblem::Mode(self.mode.clone())))?;
        let spawned_by = self
            .spawned_by
            .map(SessionId::new)
            .transpose()
            .map_err(|err| corrupt(&self.id, RowProblem::Id(err)))?;
        Ok(SessionRecord {
            id,
            host: Host::from_name(&self.host),
            project,
            fork,
            created_ms: self.created_ms,
            last_seen_ms: self.last_seen_ms,
            mode,
            spawned_by,
        })
    }
}

impl WriteTx<'_> {
    /// Records a session seen at `now_ms`: creates it, or marks an existing one as seen.
    ///
    /// An existing session keeps its host and creation time and gains a project it did not
    /// know yet; a known project is not replaced. `last_seen_ms` never moves backwards, so a
    /// clock step back cannot reorder sessions. Returns the stored row.
    pub fn upsert_session(&self, session: &NewSession, now_ms: i64) -> Result<SessionRecord> {
        let sql = format!(
            "INSERT INTO sessions (id, host, project, created_ms, last_seen_ms)
             VALUES (?1, ?2, ?3, ?4, ?4)
             ON CONFLICT (id) DO UPDATE SET
                 project = coalesce(sessions.project, excluded.project),
                 last_seen_ms = max(sessions.last_seen_ms, excluded.last_seen_ms)
             RETURNING {SESSION_COLUMNS}"
        );
        let row = self
            .conn()
            .prepare_cached(&sql)
            .and_then(|mut statement| {
                statement.query_row(
                    (
                        session.id.as_str(),
                        session.host.as_str(),
                        session.project.as_ref().map(ProjectId::as_str),
                        now_ms,
                    ),
                    SessionRow::from_row,
                )
            })
            .map_err(StoreError::sqlite("recording a session"))?;
        row.decode()
    }

    /// Records how the engine treats a session now, and the session a subagent works for.
    /// The mode follows the config (compaction can be turned off and on again), so it is
    /// rewritten when it changed; a session once known to be a subagent keeps its parent.
    pub fn set_session_mode(
        &self,
        id: &SessionId,
        mode: SessionMode,
        spawned_by: Option<&SessionId>,
    ) -> Result<()> {
        let changed = self
            .conn()
            .prepare_cached(
                "UPDATE sessions SET mode = ?2, spawned_by = coalesce(?3, spawned_by)
                 WHERE id = ?1",
            )
            .and_then(|mut statement| {
                statement.execute((
                    id.as_str(),
                    mode.as_str(),
                    spawned_by.map(SessionId::as_str),
                ))
            })
            .map_err(StoreError::sqlite("recording a session's mode"))?;
        if changed == 0 {
            return Err(StoreError::UnknownSession {
                session: id.clone(),
            });
        }
        Ok(())
    }

    /// Marks a session as seen at `now_ms` (never moving `last_seen_ms` backwards).
    pub fn touch_session(&self, id: &SessionId, now_ms: i64) -> Result<()> {
        let changed = self
            .conn()
            .prepare_cached(
                "UPDATE sessions SET last_seen_ms = max(last_seen_ms, ?2) WHERE id = ?1",
            )
            .and_then(|mut statement| statement.execute((id.as_str(), now_ms)))
            .map_err(StoreError::sqlite("touching a session"))?;
        if changed == 0 {
            return Err(StoreError::UnknownSession {
                session: id.clone(),
            });
        }
        Ok(())
    }
}

impl ReadTx<'_> {
    /// The stored session with this id, if any.
    pub fn get_session(&self, id: &SessionId) -> Result<Option<SessionRecord>> {
        let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1");
        self.conn()
            .prepare_cached(&sql)
            .and_then(|mut statement| {
                statement
                    .query_row([id.as_str()], SessionRow::from_row)
                    .optional()
            })
            .map_err(StoreError::sqlite("reading a session"))?
            .map(SessionRow::decode)
            .transpose()
    }

    /// Up to `limit` sessions, most recently seen first (ties by id, so the order is stable).
    pub fn list_sessions(&self, limit: usize) -> Result<Vec<SessionRecord>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.sessions_where("1", [], Some(limit), "listing sessions")
    }

    /// The sessions whose id starts with `prefix`, most recently seen first: every lane and
    /// branch the proxy made for one client session id (`cc-<id>-…`), so a tool server that
    /// knows only the client's id can find the conversation it serves.
    pub fn sessions_with_prefix(&self, prefix: &str) -> Result<Vec<SessionRecord>> {
        self.sessions_where(
            "substr(id, 1, length(?1)) = ?1",
            [prefix],
            None,
            "listing a client's sessions",
        )
    }

    /// The sessions of `project` a request used at or after `since_ms`, most recently seen
    /// first: the conversations of the project that are live now.
    pub fn project_sessions_seen_since(
        &self,
        project: &ProjectId,
        since_ms: i64,
    ) -> Result<Vec<SessionRecord>> {
        self.sessions_where(
            "project = ?1 AND last_seen_ms >= ?2",
            rusqlite::params![project.as_str(), since_ms],
            None,
            "listing a project's live sessions",
        )
    }

    /// The sessions matching `condition` (SQL on `sessions`, with `params`), most recently
    /// seen first (ties by id, so the order is stable), at most `limit` of them.
    fn sessions_where(
        &self,
        condition: &str,
        params: impl rusqlite::Params,
        limit: Option<i64>,
        doing: &'static str,
    ) -> Result<Vec<SessionRecord>> {
        let limit = limit.map_or(String::new(), |limit| format!(" LIMIT {limit}"));
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE {condition}
             ORDER BY last_seen_ms DESC, id{limit}"
        );
        let mut statement = self
            .conn()
            .prepare_cached(&sql)
            .map_err(StoreError::sqlite(doing))?;
        let rows = statement
            .query_map(params, SessionRow::from_row)
            .map_err(StoreError::sqlite(doing))?;
        rows.map(|row| row.map_err(StoreError::sqlite(doing))?.decode())
            .collect()
    }

    pub(crate) fn require_session(&self, id: &SessionId) -> Result<SessionRecord> {
        self.get_session(id)?
            .ok_or_else(|| StoreError::UnknownSession {
                session: id.clone(),
            })
    }
}
