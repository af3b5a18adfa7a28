//! Retention: removing a whole session, and giving the space it held back.
//!
//! A session is pruned in one write transaction: its raw log (with the message index rows and
//! the vectors of its messages and compartments), tags, drops, passes and engine state, call
//! ledger rows, compartments (live, staged, provisional) and their index rows, historian runs,
//! the facts and observations kept in its own scope, and its session notes. Project knowledge
//! stays: memories and their log, facts and observations of a project scope, smart notes (one
//! written in the session keeps its project and forgets the session), commits, the profile.
//! Hidden exchanges belong to a conversation's anchor, not a session, and age out by their own
//! rule (`tools.hidden_exchange_max_age_days`).
//!
//! A fork records its parent (`sessions.parent_id`), so a parent goes only after its forks:
//! an age-based prune takes a session only when it and every fork below it are past the
//! cutoff, and pruning one named session takes its forks with it, forks first, each in its
//! own transaction, so a failure half-way leaves no fork pointing at a missing parent.
//!
//! Rows removed leave free pages inside the file. [`Store::reclaim_free_pages`] returns them
//! to the file system when the store is in incremental auto-vacuum mode (every store created
//! since schema v21); an older store keeps them for its next writes, and only a full `VACUUM`
//! (a rewrite of the whole file, which blocks every writer while it runs) would shrink it.

use std::collections::HashMap;

use mc_core::SessionId;

use crate::error::{Result, StoreError};
use crate::historian_rows::history_scope_session;
use crate::store::{Store, WriteTx};

/// Which key a table's rows of a session are found by.
#[derive(Debug, Clone, Copy)]
enum RowKey {
    /// The session id.
    Session,
    /// The historian scope of a session without a project (`session:<id>`).
    SessionScope,
}

/// Every table that holds a session's rows, with the statement that deletes them, in an
/// order that keeps each foreign key satisfied: rows that refer to others first, the
/// session itself last. Index rows go before what they index, since they are found by it.
pub(crate) const SESSION_TABLES: &[(&str, &str)] = &[
    (
        "message_search",
        "DELETE FROM message_search WHERE rowid IN
             (SELECT rowid FROM messages WHERE session_id = ?1)",
    ),
    ("vectors", "DELETE FROM vectors WHERE session_id = ?1"),
    (
        "earlier_conversations",
        "DELETE FROM earlier_conversations WHERE session_id = ?1",
    ),
    ("drops", "DELETE FROM drops WHERE session_id = ?1"),
    ("tags", "DELETE FROM tags WHERE session_id = ?1"),
    ("passes", "DELETE FROM passes WHERE session_id = ?1"),
    (
        "engine_state",
        "DELETE FROM engine_state WHERE session_id = ?1",
    ),
    ("calls", "DELETE FROM calls WHERE session_id = ?1"),
    (
        "compartment_search",
        "DELETE FROM compartment_search WHERE session_id = ?1",
    ),
    (
        "provisional_compartments",
        "DELETE FROM provisional_compartments WHERE session_id = ?1",
    ),
    (
        "staged_compartments",
        "DELETE FROM staged_compartments WHERE session_id = ?1",
    ),
    (
        "compartments",
        "DELETE FROM compartments WHERE session_id = ?1",
    ),
    (
        "historian_runs",
        "DELETE FROM historian_runs WHERE session_id = ?1",
    ),
    (
        "historian_facts",
        "DELETE FROM historian_facts WHERE scope = ?1",
    ),
    (
        "user_observations",
        "DELETE FROM user_observations WHERE scope = ?1",
    ),
    (
        "notes",
        "DELETE FROM notes WHERE session_id = ?1 AND surface_condition IS NULL",
    ),
    ("messages", "DELETE FROM messages WHERE session_id = ?1"),
    ("sessions", "DELETE FROM sessions WHERE id = ?1"),
];

/// The key each of [`SESSION_TABLES`] is deleted by.
fn row_key(table: &str) -> RowKey {
    match table {
        "historian_facts" | "user_observations" => RowKey::SessionScope,
        _ => RowKey::Session,
    }
}

/// Rows one table lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrunedRows {
    /// The table.
    pub table: &'static str,
    /// How many of its rows went.
    pub rows: u64,
}

/// What pruning one session removed (or, rehearsed, would remove).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPrune {
    /// The session.
    pub session: SessionId,
    /// When it was last active, unix milliseconds.
    pub last_seen_ms: i64,
    /// Rows removed per table, every session-scoped table listed.
    pub rows: Vec<PrunedRows>,
    /// Bytes of the pages the removal emptied: space the store reuses for its next writes,
    /// or returns to the file system ([`Store::reclaim_free_pages`]). Rows that shared a
    /// page with rows that stay free room in that page, not counted here.
    pub freed_bytes: u64,
}

impl SessionPrune {
    /// Rows removed over every table.
    pub fn total_rows(&self) -> u64 {
        self.rows.iter().map(|pruned| pruned.rows).sum()
    }
}

/// The store's auto-vacuum mode (`PRAGMA auto_vacuum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoVacuum {
    /// Free pages stay in the file and are reused by later writes.
    None,
    /// Free pages are returned at every commit.
    Full,
    /// Free pages are returned on request (`PRAGMA incremental_vacuum`).
    Incremental,
}

/// What [`Store::reclaim_free_pages`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reclaimed {
    /// The store's auto-vacuum mode.
    pub mode: AutoVacuum,
    /// The size of one page, in bytes.
    pub page_size: u64,
    /// Free pages in the file before.
    pub free_pages_before: u64,
    /// Free pages returned to the file system.
    pub pages_returned: u64,
}

/// What pruning a list of sessions did (or, rehearsed, would do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PruneRun {
    /// Each session, in the order pruned.
    pub sessions: Vec<SessionPrune>,
    /// The free pages given back afterwards; `None` for a rehearsal or when nothing went.
    pub reclaimed: Option<Reclaimed>,
}

impl PruneRun {
    /// Rows removed per table over every session, one entry per session-scoped table.
    pub fn rows_by_table(&self) -> Vec<PrunedRows> {
        SESSION_TABLES
            .iter()
            .map(|(table, _)| PrunedRows {
                table,
                rows: self
                    .sessions
                    .iter()
                    .flat_map(|session| &session.rows)
                    .filter(|pruned| pruned.table == *table)
                    .map(|pruned| pruned.rows)
                    .sum(),
            })
            .collect()
    }

    /// Bytes of the pages emptied over every session.
    pub fn freed_bytes(&self) -> u64 {
        self.sessions
            .iter()
            .map(|session| session.freed_bytes)
            .sum()
    }
}

impl Store {
    /// Prunes `sessions` in order (forks before their parents, as
    /// [`Self::sessions_due_for_prune`] and [`Self::session_and_forks`] list them), each in
    /// its own transaction, then gives back the free pages ([`Self::reclaim_free_pages`]).
    ///
    /// With `still_due_before` (an age-based prune's cutoff), a session that a request used
    /// since it was listed, or that gained a fork since, is checked again in its transaction
    /// and skipped when it or a fork of it was active at or after the cutoff. With
    /// `rehearse`, nothing changes and the figures are what it would do.
    pub fn prune_sessions(
        &self,
        sessions: &[SessionId],
        still_due_before: Option<i64>,
        rehearse: bool,
    ) -> Result<PruneRun> {
        let mut pruned = Vec::with_capacity(sessions.len());
        for session in sessions {
            let work = |tx: &WriteTx<'_>| match still_due_before {
                Some(cutoff_ms) if tx.family_seen_since(session, cutoff_ms)? => Ok(None),
                _ => tx.prune_session_rows(session).map(Some),
            };
            let outcome = if rehearse {
                self.rehearse(work)?
            } else {
                self.write(work)?
            };
            pruned.extend(outcome);
        }
        let reclaimed = if rehearse || pruned.is_empty() {
            None
        } else {
            Some(self.reclaim_free_pages()?)
        };
        Ok(PruneRun {
            sessions: pruned,
            reclaimed,
        })
    }

    /// The sessions an age-based prune takes at `cutoff_ms`: each last active before it,
    /// with every fork below it last active before it too; forks before their parents.
    pub fn sessions_due_for_prune(&self, cutoff_ms: i64) -> Result<Vec<SessionId>> {
        const DOING: &str = "listing sessions due for pruning";
        let due: Vec<(String, Option<String>)> = self.read(|tx| {
            let mut statement = tx
                .conn()
                .prepare(
                    "WITH RECURSIVE below (top, id) AS (
                         SELECT id, id FROM sessions
                         UNION ALL
                         SELECT below.top, s.id FROM sessions AS s
                         JOIN below ON s.parent_id = below.id
                     )
                     SELECT t.id, t.parent_id FROM below
                     JOIN sessions AS s ON s.id = below.id
                     JOIN sessions AS t ON t.id = below.top
                     GROUP BY below.top
                     HAVING max(s.last_seen_ms) < ?1",
                )
                .map_err(StoreError::sqlite(DOING))?;
            let rows = statement
                .query_map([cutoff_ms], |row| Ok((row.get(0)?, row.get(1)?)))
                .map_err(StoreError::sqlite(DOING))?;
            rows.collect::<rusqlite::Result<_>>()
                .map_err(StoreError::sqlite(DOING))
        })?;
        Ok(forks_first(due))
    }

    /// Session `session` and every fork below it, forks before their parents; the
    /// session must exist ([`StoreError::UnknownSession`]).
    pub fn session_and_forks(&self, session: &SessionId) -> Result<Vec<SessionId>> {
        const DOING: &str = "listing a session's forks";
        let family: Vec<(String, Option<String>)> = self.read(|tx| {
            tx.require_session(session)?;
            let mut statement = tx
                .conn()
                .prepare(
                    "WITH RECURSIVE below (id) AS (
                         SELECT ?1
                         UNION ALL
                         SELECT s.id FROM sessions AS s JOIN below ON s.parent_id = below.id
                     )
                     SELECT s.id, s.parent_id FROM below JOIN sessions AS s ON s.id = below.id",
                )
                .map_err(StoreError::sqlite(DOING))?;
            let rows = statement
                .query_map([session.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))
                .map_err(StoreError::sqlite(DOING))?;
            rows.collect::<rusqlite::Result<_>>()
                .map_err(StoreError::sqlite(DOING))
        })?;
        Ok(forks_first(family))
    }

    /// Removes every row of `session` in one transaction and says what went. With
    /// `rehearse`, the same deletions run and are rolled back: the figures are exact and
    /// nothing changes. A fork of the session must be pruned first (see
    /// [`Self::session_and_forks`]); one that is not makes the prune fail, whole.
    pub fn prune_session(&self, session: &SessionId, rehearse: bool) -> Result<SessionPrune> {
        let work = |tx: &WriteTx<'_>| tx.prune_session_rows(session);
        if rehearse {
            self.rehearse(work)
        } else {
            self.write(work)
        }
    }

    /// Returns the store's free pages to the file system when it is in incremental
    /// auto-vacuum mode; in any other mode it only counts them (they are reused by later
    /// writes, and shrinking the file would take a `VACUUM` that rewrites all of it).
    pub fn reclaim_free_pages(&self) -> Result<Reclaimed> {
        const DOING: &str = "returning free pages to the file system";
        self.write(|tx| {
            let conn = tx.conn();
            let pragma = |name: &str| -> Result<u64> {
                conn.query_row(&format!("PRAGMA {name}"), [], |row| row.get::<_, i64>(0))
                    .map(|value| u64::try_from(value).unwrap_or(0))
                    .map_err(StoreError::sqlite(DOING))
            };
            let mode = match pragma("auto_vacuum")? {
                1 => AutoVacuum::Full,
                2 => AutoVacuum::Incremental,
                _ => AutoVacuum::None,
            };
            let page_size = pragma("page_size")?;
            let free_pages_before = pragma("freelist_count")?;
            if mode == AutoVacuum::Incremental && free_pages_before > 0 {
                let mut statement = conn
                    .prepare("PRAGMA incremental_vacuum")
                    .map_err(StoreError::sqlite(DOING))?;
                let mut rows = statement.query([]).map_err(StoreError::sqlite(DOING))?;
                while rows.next().map_err(StoreError::sqlite(DOING))?.is_some() {}
            }
            let free_pages_after = pragma("freelist_count")?;
            Ok(Reclaimed {
                mode,
                page_size,
                free_pages_before,
                pages_returned: free_pages_before.saturating_sub(free_pages_after),
            })
        })
    }
}

impl WriteTx<'_> {
    /// Whether `session` or a fork below it was active at or after `cutoff_ms`.
    fn family_seen_since(&self, session: &SessionId, cutoff_ms: i64) -> Result<bool> {
        self.conn()
            .query_row(
                "WITH RECURSIVE below (id) AS (
                     SELECT ?1
                     UNION ALL
                     SELECT s.id FROM sessions AS s JOIN below ON s.parent_id = below.id
                 )
                 SELECT EXISTS (SELECT 1 FROM below JOIN sessions AS s ON s.id = below.id
                                WHERE s.last_seen_ms >= ?2)",
                (session.as_str(), cutoff_ms),
                |row| row.get(0),
            )
            .map_err(StoreError::sqlite(
                "checking a session is still due for pruning",
            ))
    }

    fn prune_session_rows(&self, session: &SessionId) -> Result<SessionPrune> {
        const DOING: &str = "pruning a session";
        let record = self.require_session(session)?;
        let conn = self.conn();
        let free_pages = || -> Result<u64> {
            conn.query_row("PRAGMA freelist_count", [], |row| row.get::<_, i64>(0))
                .map(|pages| u64::try_from(pages).unwrap_or(0))
                .map_err(StoreError::sqlite(DOING))
        };
        let page_size: i64 = conn
            .query_row("PRAGMA page_size", [], |row| row.get(0))
            .map_err(StoreError::sqlite(DOING))?;
        let free_before = free_pages()?;
        // The raw log's delete trigger lets through the messages of a session named here.
        conn.execute(
            "INSERT INTO sessions_being_pruned (session_id) VALUES (?1)",
            [session.as_str()],
        )
        .map_err(StoreError::sqlite(DOING))?;
        self.note_drop_write();
        let scope = history_scope_session(session);
        let mut rows = Vec::with_capacity(SESSION_TABLES.len());
        for (table, sql) in SESSION_TABLES {
            let key = match row_key(table) {
                RowKey::Session => session.as_str(),
                RowKey::SessionScope => scope.as_str(),
            };
            let removed = conn
                .execute(sql, [key])
                .map_err(StoreError::sqlite(DOING))?;
            rows.push(PrunedRows {
                table,
                rows: u64::try_from(removed).unwrap_or(u64::MAX),
            });
        }
        // A smart note belongs to its project; the session it was written in is only a
        // mention, which goes with the session.
        conn.execute(
            "UPDATE notes SET session_id = NULL WHERE session_id = ?1",
            [session.as_str()],
        )
        .map_err(StoreError::sqlite(DOING))?;
        conn.execute(
            "DELETE FROM sessions_being_pruned WHERE session_id = ?1",
            [session.as_str()],
        )
        .map_err(StoreError::sqlite(DOING))?;
        // New messages take the row id after the largest left. The indexes' watermarks must
        // sit below it, or messages stored later under a row id freed here would be taken
        // for indexed ones; a watermark already below it stays, and the rows above it are
        // indexed later whatever their id.
        conn.execute_batch(
            "UPDATE search_watermarks
                 SET indexed_through = min(indexed_through,
                     (SELECT coalesce(max(rowid), 0) FROM messages))
                 WHERE name = 'messages';
             UPDATE vector_watermarks
                 SET messages_through = min(messages_through,
                     (SELECT coalesce(max(rowid), 0) FROM messages));",
        )
        .map_err(StoreError::sqlite(DOING))?;
        let freed_pages = free_pages()?.saturating_sub(free_before);
        Ok(SessionPrune {
            session: session.clone(),
            last_seen_ms: record.last_seen_ms,
            rows,
            freed_bytes: freed_pages.saturating_mul(u64::try_from(page_size).unwrap_or(0)),
        })
    }
}

/// Orders sessions so that each comes before its parent when both are listed; ids that no
/// longer validate are skipped (nothing can name them).
fn forks_first(sessions: Vec<(String, Option<String>)>) -> Vec<SessionId> {
    let parents: HashMap<String, Option<String>> = sessions.iter().cloned().collect();
    let depth = |id: &str| {
        let mut depth = 0_usize;
        let mut at = id;
        while let Some(Some(parent)) = parents.get(at) {
            depth += 1;
            at = parent;
            if depth > parents.len() {
                break;
            }
        }
        depth
    };
    let mut ordered: Vec<(usize, String)> = sessions
        .iter()
        .map(|(id, _)| (depth(id), id.clone()))
        .collect();
    ordered.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    ordered
        .into_iter()
        .filter_map(|(_, id)| SessionId::new(id).ok())
        .collect()
}

#[cfg(test)]
mod tests;
