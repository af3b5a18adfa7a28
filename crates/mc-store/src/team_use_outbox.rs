//! This machine's use of a team's memories on its way to the team store (schema v28).
//!
//! A search returning a memory happens on the request path, many times a session: sending
//! each one to PostgreSQL there would make a request wait on the network. So each is summed
//! into an open row per memory in this SQLite file, in the transaction that records it
//! locally, and the background sync sends them in batches: it seals each project's open rows
//! under one fresh write id ([`WriteTx::seal_team_use`]), sends the batch, and forgets it once
//! the server answered ([`WriteTx::forget_team_use`]). A batch the server did not answer stays
//! sealed and is sent again under the same id, which the server records, so a search is
//! counted once however often its batch travels. Use gathered meanwhile opens new rows.

use mc_core::ProjectId;

use crate::error::{Result, StoreError};
use crate::store::{ReadTx, WriteTx};
use crate::team_memory_use::{TeamUse, later};
use crate::team_outbox::project_of;

/// A sealed batch of one project's use, sent under one write id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamUseBatch {
    /// The id the server deduplicates by.
    pub write_id: String,
    /// The project whose memories were used.
    pub project: ProjectId,
    /// The use of each memory since the previous batch.
    pub uses: Vec<TeamUse>,
}

impl ReadTx<'_> {
    /// The projects with use not yet sealed into a batch.
    pub fn team_use_to_seal(&self) -> Result<Vec<ProjectId>> {
        const DOING: &str = "listing the team use to send";
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT DISTINCT project_id FROM team_use_outbox WHERE write_id IS NULL
                 ORDER BY 1",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([], |row| project_of(row, 0))
            .map_err(StoreError::sqlite(DOING))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(StoreError::sqlite(DOING))
    }

    /// Every sealed batch, oldest first.
    pub fn sealed_team_use(&self) -> Result<Vec<TeamUseBatch>> {
        const DOING: &str = "reading the team use to send";
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT write_id, project_id, id, retrievals, last_retrieved_ms,
                   last_restated_ms
                 FROM team_use_outbox WHERE write_id IS NOT NULL
                 ORDER BY (SELECT MIN(seq) FROM team_use_outbox o
                           WHERE o.write_id = team_use_outbox.write_id), seq",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([], |row| {
                let used = TeamUse {
                    id: row.get(2)?,
                    retrievals: row.get(3)?,
                    last_retrieved_ms: row.get(4)?,
                    last_restated_ms: row.get(5)?,
                };
                Ok((row.get::<_, String>(0)?, project_of(row, 1)?, used))
            })
            .map_err(StoreError::sqlite(DOING))?;
        let mut batches: Vec<TeamUseBatch> = Vec::new();
        for row in rows {
            let (write_id, project, used) = row.map_err(StoreError::sqlite(DOING))?;
            match batches.last_mut() {
                Some(batch) if batch.write_id == write_id => batch.uses.push(used),
                Some(_) | None => batches.push(TeamUseBatch {
                    write_id,
                    project,
                    uses: vec![used],
                }),
            }
        }
        Ok(batches)
    }

    /// How many memories' use waits to be sent, sealed or not.
    pub fn team_use_queue(&self) -> Result<u64> {
        self.conn()
            .prepare_cached("SELECT COUNT(*) FROM team_use_outbox")
            .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
            .map_err(StoreError::sqlite("counting the team use to send"))
    }
}

impl WriteTx<'_> {
    /// Adds `used` to the project's open row for its memory.
    pub(crate) fn queue_team_use(&self, project: &ProjectId, used: &TeamUse) -> Result<()> {
        self.conn()
            .prepare_cached(concat!(
                "INSERT INTO team_use_outbox (project_id, id, retrievals, last_retrieved_ms,
                   last_restated_ms) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (project_id, id) WHERE write_id IS NULL DO UPDATE SET
                   retrievals = retrievals + excluded.retrievals,
                   last_retrieved_ms = ",
                later!("last_retrieved_ms", "excluded.last_retrieved_ms"),
                ", last_restated_ms = ",
                later!("last_restated_ms", "excluded.last_restated_ms")
            ))
            .and_then(|mut statement| {
                statement.execute(rusqlite::params![
                    project.as_str(),
                    used.id,
                    used.retrievals,
                    used.last_retrieved_ms,
                    used.last_restated_ms
                ])
            })
            .map(|_| ())
            .map_err(StoreError::sqlite("queuing the use of a team memory"))
    }

    /// Seals each project's open use under its write id (`sealed` pairs a project with a
    /// fresh id); a project with nothing open is left alone.
    pub fn seal_team_use(&self, sealed: &[(ProjectId, String)]) -> Result<()> {
        let mut statement = self
            .conn()
            .prepare_cached(
                "UPDATE team_use_outbox SET write_id = ?2
                 WHERE project_id = ?1 AND write_id IS NULL",
            )
            .map_err(StoreError::sqlite("sealing a batch of team use"))?;
        for (project, write_id) in sealed {
            statement
                .execute([project.as_str(), write_id.as_str()])
                .map_err(StoreError::sqlite("sealing a batch of team use"))?;
        }
        Ok(())
    }

    /// Removes a batch the server answered.
    pub fn forget_team_use(&self, write_id: &str) -> Result<()> {
        self.conn()
            .prepare_cached("DELETE FROM team_use_outbox WHERE write_id = ?1")
            .and_then(|mut statement| statement.execute([write_id]))
            .map(|_| ())
            .map_err(StoreError::sqlite("forgetting a batch of team use"))
    }
}
