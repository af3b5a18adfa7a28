//! A project's git commits, stored for search: the HEAD history a caller read with git.
//!
//! Commits never change once made, so a commit is stored once per project (by its hash) and
//! indexed by its message as it arrives; reading the history again adds only what is new.

use mc_core::ProjectId;
use mc_core::search::FtsQuery;

use crate::error::{Result, StoreError};
use crate::search::SearchScope;
use crate::store::{ReadTx, WriteTx};

/// A commit as git reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// The full hash.
    pub sha: String,
    /// The author's name.
    pub author: String,
    /// The commit time, unix milliseconds.
    pub committed_ms: i64,
    /// The first line of the message.
    pub subject: String,
    /// The rest of the message.
    pub body: String,
}

/// A commit that matched.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitHit {
    /// The commit.
    pub commit: Commit,
    /// Negated BM25, higher is better.
    pub score: f64,
}

impl WriteTx<'_> {
    /// Stores the project's commits not stored yet; returns how many were new.
    pub fn add_commits(&self, project: &ProjectId, commits: &[Commit]) -> Result<usize> {
        let mut insert = self
            .conn()
            .prepare_cached(
                "INSERT INTO commits (project_id, sha, author, committed_ms, subject, body)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (project_id, sha) DO NOTHING",
            )
            .map_err(StoreError::sqlite("storing commits"))?;
        let mut added = 0;
        for commit in commits {
            added += insert
                .execute(rusqlite::params![
                    project.as_str(),
                    commit.sha,
                    commit.author,
                    commit.committed_ms,
                    commit.subject,
                    commit.body
                ])
                .map_err(StoreError::sqlite("storing commits"))?;
        }
        Ok(added)
    }
}

impl ReadTx<'_> {
    /// The best `limit` commits of `project` for `query`, made within the scope's time window.
    pub fn search_commits(
        &self,
        query: &FtsQuery,
        project: &ProjectId,
        scope: &SearchScope,
        limit: u32,
    ) -> Result<Vec<CommitHit>> {
        const DOING: &str = "searching commits";
        let since = scope.since_ms.unwrap_or(i64::MIN);
        let until = scope.until_ms.unwrap_or(i64::MAX);
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT c.sha, c.author, c.committed_ms, c.subject, c.body, -bm25(commit_search) AS score
                 FROM commit_search JOIN commits c ON c.id = commit_search.rowid
                 WHERE commit_search MATCH ?1 AND c.project_id = ?2
                   AND c.committed_ms >= ?3 AND c.committed_ms < ?4
                 ORDER BY score DESC, c.id
                 LIMIT ?5",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map(
                rusqlite::params![query.expression, project.as_str(), since, until, limit],
                |row| {
                    Ok(CommitHit {
                        commit: commit_at(row, 0)?,
                        score: row.get(5)?,
                    })
                },
            )
            .map_err(StoreError::sqlite(DOING))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(StoreError::sqlite(DOING))
    }
}

/// The commit in five columns of `row` from `first`: sha, author, committed_ms, subject, body.
pub(crate) fn commit_at(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Commit> {
    Ok(Commit {
        sha: row.get(first)?,
        author: row.get(first + 1)?,
        committed_ms: row.get(first + 2)?,
        subject: row.get(first + 3)?,
        body: row.get(first + 4)?,
    })
}
