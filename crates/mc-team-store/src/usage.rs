//! The team's use of its memories: batches of searches and restatements sent by each proxy,
//! summed per memory, so `archive_stale_memories` on any machine sees every machine's use.
//!
//! A batch is one transaction under the project's advisory lock, recorded by its write id
//! like every other write: a batch sent again after a lost answer counts once. Times only
//! move forwards (`GREATEST` ignores a missing one), so a batch arriving late never makes a
//! memory look older. Ids that are no memory of the project are left out: a memory removed
//! or never synced has no use to keep.

use mc_core::ProjectId;
use mc_store::TeamUse;

use crate::client::TeamStore;
use crate::error::{Result, postgres};
use crate::rows::pg_id;
use crate::writes::Change;

/// The SQL that adds one batch's use; `$1` the project, then the batch as parallel arrays.
const ADD_USE: &str = "INSERT INTO mc_memory_use AS u (project_id, memory_id, retrievals,
       last_retrieved_ms, last_restated_ms, version)
     SELECT $1, b.id, b.retrievals, b.retrieved_ms, b.restated_ms, nextval('mc_version')
     FROM unnest($2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[])
       AS b (id, retrievals, retrieved_ms, restated_ms)
     JOIN mc_memories m ON m.id = b.id AND m.project_id = $1
     ON CONFLICT (project_id, memory_id) DO UPDATE SET
       retrievals = u.retrievals + excluded.retrievals,
       last_retrieved_ms = GREATEST(u.last_retrieved_ms, excluded.last_retrieved_ms),
       last_restated_ms = GREATEST(u.last_restated_ms, excluded.last_restated_ms),
       version = excluded.version";

impl TeamStore {
    /// Adds a batch of the project's use once: a `write_id` seen before changes nothing.
    /// Returns how many memories it counted (0 for a batch that had landed before).
    pub async fn record_use(
        &self,
        write_id: &str,
        project: &ProjectId,
        uses: &[TeamUse],
        now_ms: i64,
    ) -> Result<u64> {
        const DOING: &str = "recording the use of memories";
        let mut client = self.client(DOING).await?;
        let change = Change::begin(&mut client, project, now_ms, self.redacted(), DOING).await?;
        if change.lock_and_check(write_id).await?.is_some() {
            return Ok(0);
        }
        let counted = change.add_use(uses).await?;
        change.record_write(write_id, None).await?;
        change.commit("committing the use of memories").await?;
        Ok(counted)
    }
}

impl Change<'_> {
    /// Adds `uses` to the project's memories; returns how many rows it touched.
    pub(crate) async fn add_use(&self, uses: &[TeamUse]) -> Result<u64> {
        let ids: Vec<i64> = uses.iter().map(|used| pg_id(used.id)).collect();
        let retrievals: Vec<i64> = uses.iter().map(|used| pg_id(used.retrievals)).collect();
        let retrieved: Vec<Option<i64>> = uses.iter().map(|used| used.last_retrieved_ms).collect();
        let restated: Vec<Option<i64>> = uses.iter().map(|used| used.last_restated_ms).collect();
        self.tx
            .execute(
                ADD_USE,
                &[
                    &self.project.as_str(),
                    &ids,
                    &retrievals,
                    &retrieved,
                    &restated,
                ],
            )
            .await
            .map_err(postgres(self.url, "recording the use of memories"))
    }

    /// Records that memory `id`'s fact was stated again now (an add merged into it).
    pub(crate) async fn note_restated(&self, id: u64) -> Result<()> {
        let restated = TeamUse {
            id,
            last_restated_ms: Some(self.now_ms),
            ..TeamUse::default()
        };
        self.add_use(&[restated]).await.map(|_| ())
    }
}
