//! The local cache of a team store's project knowledge (schema v26).
//!
//! When a team store is configured, a project's memories live in PostgreSQL, and this cache
//! is what the engine reads on the request path: it never waits on the network, and it keeps
//! answering while the server is unreachable. A sync copies the team store's changes here by
//! version cursor ([`WriteTx::cache_team_changes`]); [`TeamCache`] reads them through the same
//! [`ProjectKnowledge`] trait as the local tables, so the head, search and the agent tools do
//! not know which store they read. Log ids here are the team store's versions.

use mc_core::ProjectId;
use mc_core::search::FtsQuery;
use rusqlite::OptionalExtension;

use crate::error::{Result, StoreError};
use crate::knowledge::ProjectKnowledge;
use crate::memory_rows::{
    COLUMNS, MemoryLogEntry, MemoryStatus, StoredMemory, log_entries, memories_with_status,
    memory_from_row,
};
use crate::search::{MemoryHit, SearchScope};
use crate::store::{ReadTx, WriteTx};

/// A project's knowledge as the team store last sent it, read in the caller's transaction.
#[derive(Clone, Copy)]
pub struct TeamCache<'t, 'c> {
    tx: &'t ReadTx<'c>,
}

impl<'t, 'c> TeamCache<'t, 'c> {
    /// The cache as `tx` sees it.
    pub fn new(tx: &'t ReadTx<'c>) -> Self {
        Self { tx }
    }
}

impl ProjectKnowledge for TeamCache<'_, '_> {
    fn memories(
        &self,
        project: &ProjectId,
        statuses: &[MemoryStatus],
    ) -> Result<Vec<StoredMemory>> {
        memories_with_status(
            self.tx.conn(),
            &format!("SELECT {COLUMNS} FROM team_memories WHERE project_id = ?1 ORDER BY id"),
            "reading cached team memories",
            project.as_str(),
            statuses,
        )
    }

    fn memory(&self, project: &ProjectId, id: u64) -> Result<Option<StoredMemory>> {
        self.tx
            .conn()
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM team_memories WHERE project_id = ?1 AND id = ?2"
            ))
            .and_then(|mut statement| {
                statement
                    .query_row(rusqlite::params![project.as_str(), id], memory_from_row)
                    .optional()
            })
            .map_err(StoreError::sqlite("reading a cached team memory"))
    }

    fn memory_log_since(&self, project: &ProjectId, after: u64) -> Result<Vec<MemoryLogEntry>> {
        log_entries(
            self.tx.conn(),
            "SELECT version, memory_id, action, at_ms, detail, actor, task
             FROM team_memory_log WHERE project_id = ?1 AND version > ?2 ORDER BY version",
            "reading the cached team memory log",
            project.as_str(),
            after,
        )
    }

    fn memory_log_head(&self, project: &ProjectId) -> Result<u64> {
        self.tx
            .conn()
            .prepare_cached(
                "SELECT COALESCE(MAX(version), 0) FROM team_memory_log WHERE project_id = ?1",
            )
            .and_then(|mut statement| statement.query_row([project.as_str()], |row| row.get(0)))
            .map_err(StoreError::sqlite("reading the cached team memory log"))
    }

    fn search_memories(
        &self,
        query: &FtsQuery,
        project: &ProjectId,
        scope: &SearchScope,
        limit: u32,
    ) -> Result<Vec<MemoryHit>> {
        self.tx.memory_fts_hits(
            "SELECT m.id, -bm25(team_memory_search) AS score
             FROM team_memory_search JOIN team_memories m ON m.row = team_memory_search.rowid
             WHERE team_memory_search MATCH ?1 AND m.project_id = ?2 AND m.status <> 'archived'
               AND m.updated_ms >= ?3 AND m.updated_ms < ?4
             ORDER BY score DESC, m.id
             LIMIT ?5",
            "searching cached team memories",
            query,
            project,
            scope,
            limit,
        )
    }
}

impl ReadTx<'_> {
    /// The projects whose knowledge the cache keeps: every project a session was seen in,
    /// every project cached before, and every project with a change waiting for the team
    /// store (a change queued from the dashboard or a command, on a machine with no session
    /// in that project, must come back into the cache once it lands).
    pub fn knowledge_projects(&self) -> Result<Vec<ProjectId>> {
        const DOING: &str = "listing the projects to cache";
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT project FROM sessions WHERE project IS NOT NULL
                 UNION SELECT project_id FROM team_cursors
                 UNION SELECT project_id FROM team_outbox
                 UNION SELECT project_id FROM team_note_outbox ORDER BY 1",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([], |row| row.get::<_, String>(0))
            .map_err(StoreError::sqlite(DOING))?;
        let mut projects = Vec::new();
        for row in rows {
            // A name that is no project id cannot be asked of the team store; skip it.
            if let Ok(project) = ProjectId::new(row.map_err(StoreError::sqlite(DOING))?) {
                projects.push(project);
            }
        }
        Ok(projects)
    }

    /// When any project's cache last synced with the team store (`None`: never).
    pub fn team_last_sync_ms(&self) -> Result<Option<i64>> {
        self.conn()
            .prepare_cached("SELECT MAX(synced_ms) FROM team_cursors")
            .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
            .map_err(StoreError::sqlite(
                "reading when the team cache last synced",
            ))
    }

    /// The team store version the project's cache has read up to, and when it last synced
    /// (`None` when it never has).
    pub fn team_cursor(&self, project: &ProjectId) -> Result<Option<(u64, i64)>> {
        self.conn()
            .prepare_cached("SELECT version, synced_ms FROM team_cursors WHERE project_id = ?1")
            .and_then(|mut statement| {
                statement
                    .query_row([project.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))
                    .optional()
            })
            .map_err(StoreError::sqlite("reading a team cursor"))
    }
}

impl WriteTx<'_> {
    /// Copies changes read from the team store into the cache: each memory row as it stands
    /// now, each log entry once, and the cursor moved to `head` (never back). Copying the
    /// same changes twice leaves the cache as once.
    pub fn cache_team_changes(
        &self,
        project: &ProjectId,
        memories: &[(StoredMemory, u64)],
        log: &[MemoryLogEntry],
        head: u64,
        now_ms: i64,
    ) -> Result<()> {
        const DOING: &str = "caching team memories";
        let conn = self.conn();
        let mut upsert = conn
            .prepare_cached(
                "INSERT INTO team_memories (project_id, id, category, content, status, source,
                   seen_count, created_ms, updated_ms, superseded_by, version)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                 ON CONFLICT (project_id, id) DO UPDATE SET category = excluded.category,
                   content = excluded.content, status = excluded.status,
                   source = excluded.source, seen_count = excluded.seen_count,
                   updated_ms = excluded.updated_ms, superseded_by = excluded.superseded_by,
                   version = excluded.version
                 WHERE excluded.version > team_memories.version",
            )
            .map_err(StoreError::sqlite(DOING))?;
        for (memory, version) in memories {
            let record = &memory.record;
            upsert
                .execute(rusqlite::params![
                    project.as_str(),
                    memory.id,
                    record.category.as_str(),
                    record.content,
                    record.status.as_str(),
                    record.source.as_str(),
                    record.seen_count,
                    record.created_ms,
                    record.updated_ms,
                    memory.superseded_by,
                    version
                ])
                .map_err(StoreError::sqlite(DOING))?;
        }
        let mut insert_log = conn
            .prepare_cached(
                "INSERT OR IGNORE INTO team_memory_log (project_id, version, memory_id, action,
                   at_ms, detail, actor, task) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .map_err(StoreError::sqlite(DOING))?;
        for entry in log {
            insert_log
                .execute(rusqlite::params![
                    project.as_str(),
                    entry.id,
                    entry.memory_id,
                    entry.action.as_str(),
                    entry.at_ms,
                    entry.detail,
                    entry.actor.map(|actor| actor.as_str()),
                    entry.task
                ])
                .map_err(StoreError::sqlite(DOING))?;
        }
        conn.prepare_cached(
            "INSERT INTO team_cursors (project_id, version, synced_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT (project_id) DO UPDATE SET
               version = MAX(version, excluded.version), synced_ms = excluded.synced_ms",
        )
        .and_then(|mut statement| {
            statement.execute(rusqlite::params![project.as_str(), head, now_ms])
        })
        .map(|_| ())
        .map_err(StoreError::sqlite(DOING))
    }
}
