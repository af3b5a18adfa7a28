//! The commit index shared through the team store (schema v30).
//!
//! Commits never change, and the team store keeps each once per project by its hash, so no
//! write queue is needed: the rows the team store has not had from this machine are the
//! queue ([`ReadTx::unsent_team_commits`]), and sending one twice adds nothing there. The
//! sync marks what it sent ([`WriteTx::mark_team_commits_sent`]) and copies the team's
//! commits in ([`WriteTx::cache_team_commits`]), where the local search finds them as it
//! finds this clone's own.

use mc_core::ProjectId;

use crate::commits::{Commit, commit_at};
use crate::error::{Result, StoreError};
use crate::store::{ReadTx, WriteTx};
use crate::team_outbox::project_of;

/// A stored commit the team store has not had from this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsentCommit {
    /// Its local row, for [`WriteTx::mark_team_commits_sent`].
    pub row: i64,
    /// Its project.
    pub project: ProjectId,
    /// The commit.
    pub commit: Commit,
}

impl ReadTx<'_> {
    /// The oldest `limit` stored commits the team store has not had from this machine.
    pub fn unsent_team_commits(&self, limit: u32) -> Result<Vec<UnsentCommit>> {
        const DOING: &str = "reading the commits to send to the team store";
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT id, project_id, sha, author, committed_ms, subject, body
                 FROM commits WHERE team_sent = 0 ORDER BY id LIMIT ?1",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([limit], |row| {
                let project = project_of(row, 1)?;
                Ok(UnsentCommit {
                    row: row.get(0)?,
                    project,
                    commit: commit_at(row, 2)?,
                })
            })
            .map_err(StoreError::sqlite(DOING))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(StoreError::sqlite(DOING))
    }

    /// How many stored commits wait to be sent to the team store.
    pub fn team_commit_queue(&self) -> Result<u64> {
        const DOING: &str = "counting the commits to send to the team store";
        self.conn()
            .query_row(
                "SELECT COUNT(*) FROM commits WHERE team_sent = 0",
                [],
                |row| row.get(0),
            )
            .map_err(StoreError::sqlite(DOING))
    }
}

impl WriteTx<'_> {
    /// Marks the commits of these local rows as held by the team store.
    pub fn mark_team_commits_sent(&self, rows: &[i64]) -> Result<()> {
        const DOING: &str = "marking commits sent to the team store";
        let mut mark = self
            .conn()
            .prepare_cached("UPDATE commits SET team_sent = 1 WHERE id = ?1")
            .map_err(StoreError::sqlite(DOING))?;
        for row in rows {
            mark.execute([row]).map_err(StoreError::sqlite(DOING))?;
        }
        Ok(())
    }

    /// Stores the team's commits of `project` (indexed for search as they arrive), each
    /// marked as held by the team store, a commit this machine stored itself included;
    /// returns how many were new here.
    pub fn cache_team_commits(&self, project: &ProjectId, commits: &[Commit]) -> Result<usize> {
        const DOING: &str = "storing the team's commits";
        let conn = self.conn();
        let mut insert = conn
            .prepare_cached(
                "INSERT INTO commits
                   (project_id, sha, author, committed_ms, subject, body, team_sent)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1)
                 ON CONFLICT (project_id, sha) DO NOTHING",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let mut held = conn
            .prepare_cached(
                "UPDATE commits SET team_sent = 1
                 WHERE project_id = ?1 AND sha = ?2 AND team_sent = 0",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let mut added = 0;
        for commit in commits {
            let inserted = insert
                .execute(rusqlite::params![
                    project.as_str(),
                    commit.sha,
                    commit.author,
                    commit.committed_ms,
                    commit.subject,
                    commit.body
                ])
                .map_err(StoreError::sqlite(DOING))?;
            if inserted == 0 {
                held.execute(rusqlite::params![project.as_str(), commit.sha])
                    .map_err(StoreError::sqlite(DOING))?;
            }
            added += inserted;
        }
        Ok(added)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;

    fn commit(sha: &str, subject: &str) -> Commit {
        Commit {
            sha: sha.to_owned(),
            author: "Ada".to_owned(),
            committed_ms: 1_764_000_000_000,
            subject: subject.to_owned(),
            body: String::new(),
        }
    }

    #[test]
    fn own_commits_wait_until_sent_and_the_teams_arrive_already_held() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let project = ProjectId::new("p").unwrap();
        store
            .write(|tx| {
                tx.add_commits(
                    &project,
                    &[commit("a1", "Parse cards"), commit("b2", "Retry uploads")],
                )
            })
            .unwrap();
        let unsent = store.read(|tx| tx.unsent_team_commits(10)).unwrap();
        assert_eq!(
            unsent
                .iter()
                .map(|c| c.commit.sha.as_str())
                .collect::<Vec<_>>(),
            ["a1", "b2"]
        );
        assert_eq!(store.read(|tx| tx.unsent_team_commits(1)).unwrap().len(), 1);

        store
            .write(|tx| tx.mark_team_commits_sent(&[unsent[0].row]))
            .unwrap();
        // The team's copy of b2 (this machine's, not yet marked) and a colleague's c3.
        let added = store
            .write(|tx| {
                tx.cache_team_commits(
                    &project,
                    &[
                        commit("b2", "Retry uploads"),
                        commit("c3", "Fuzz the card parser"),
                    ],
                )
            })
            .unwrap();
        assert_eq!(added, 1);
        assert!(
            store
                .read(|tx| tx.unsent_team_commits(10))
                .unwrap()
                .is_empty()
        );
        assert_eq!(store.read(|tx| tx.team_commit_queue()).unwrap(), 0);
        let again = store
            .write(|tx| tx.cache_team_commits(&project, &[commit("c3", "Fuzz the card parser")]))
            .unwrap();
        assert_eq!(again, 0, "copying twice adds nothing");
    }
}
