//! A project's commit index in the team store: every commit any proxy of the team read from
//! its clone, once per project by its hash.

use mc_core::ProjectId;
use mc_store::Commit;
use tokio_postgres::Row;

use crate::client::TeamStore;
use crate::error::{Result, postgres};
use crate::writes::lock_project;

/// The columns [`commit_of`] reads, in order.
pub(crate) const COMMIT_COLUMNS: &str = "sha, author, committed_ms, subject, body, version";

/// A commit row and its version.
pub(crate) fn commit_of(row: &Row) -> (Commit, i64) {
    let commit = Commit {
        sha: row.get(0),
        author: row.get(1),
        committed_ms: row.get(2),
        subject: row.get(3),
        body: row.get(4),
    };
    (commit, row.get(5))
}

impl TeamStore {
    /// Adds the commits of `project` the team store does not hold yet, in one transaction
    /// under the project's advisory lock; returns how many were new. Sending a commit again
    /// changes nothing.
    pub async fn add_commits(&self, project: &ProjectId, commits: &[Commit]) -> Result<u64> {
        const DOING: &str = "storing commits";
        let url = self.redacted();
        let mut client = self.client(DOING).await?;
        let tx = client.transaction().await.map_err(postgres(url, DOING))?;
        lock_project(&tx, project, url).await?;
        let column =
            |field: fn(&Commit) -> &str| -> Vec<&str> { commits.iter().map(field).collect() };
        let times: Vec<i64> = commits.iter().map(|commit| commit.committed_ms).collect();
        let added = tx
            .execute(
                "INSERT INTO mc_commits
                   (project_id, sha, author, committed_ms, subject, body, version)
                 SELECT $1, sha, author, committed_ms, subject, body, nextval('mc_version')
                 FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[])
                   AS given (sha, author, committed_ms, subject, body)
                 ON CONFLICT (project_id, sha) DO NOTHING",
                &[
                    &project.as_str(),
                    &column(|commit| &commit.sha),
                    &column(|commit| &commit.author),
                    &times,
                    &column(|commit| &commit.subject),
                    &column(|commit| &commit.body),
                ],
            )
            .await
            .map_err(postgres(url, DOING))?;
        tx.commit().await.map_err(postgres(url, DOING))?;
        Ok(added)
    }
}
