//! A rebuild's staging area (schema v8): new compartments for a session are gathered here
//! beside the ones in use, and replace them in one transaction once they cover as much.
//!
//! Rebuilding a long session takes many model runs; a session must never render from half
//! a rebuild, and an interrupted rebuild must not start over. So staged rows follow the
//! same continuity rule as the history (from ordinal 0, no gap, no overlap), survive
//! between runs of `recomp`, and the swap refuses a staged set that ends before the old one.

use mc_core::SessionId;
use mc_core::head::Compartment;

use crate::compartments::{COLUMNS, Shelf};
use crate::error::{Result, StoreError};
use crate::store::{ReadTx, WriteTx};

/// What a swap did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Swapped {
    /// Compartments removed from the history.
    pub replaced: u64,
    /// Staged compartments now in the history.
    pub installed: u64,
    /// The first ordinal the new history does not cover.
    pub covered_until: u64,
}

impl ReadTx<'_> {
    /// The session's staged compartments, in ordinal order.
    pub fn staged_compartments(&self, session: &SessionId) -> Result<Vec<Compartment>> {
        self.shelved(Shelf::Staging, session, 0)
    }

    /// The first ordinal the staged compartments do not cover: where a rebuild resumes
    /// (0 when none are staged).
    pub fn staged_until(&self, session: &SessionId) -> Result<u64> {
        self.shelved_until(Shelf::Staging, session)
    }
}

impl WriteTx<'_> {
    /// Appends `compartments` to the session's staged set, under the rule of
    /// [`WriteTx::append_compartments`]: the first starts at [`ReadTx::staged_until`].
    pub fn stage_compartments(
        &self,
        session: &SessionId,
        compartments: &[Compartment],
        now_ms: i64,
    ) -> Result<()> {
        self.shelve(Shelf::Staging, session, compartments, now_ms)
    }

    /// Replaces the session's compartments with its staged ones and empties the staging
    /// area. Refused ([`StoreError::RebuildIncomplete`]) while the staged set ends before
    /// the history it replaces, or is empty: swapping then would forget summarised history.
    /// Atomic with the caller's transaction: a later error in it restores the old set.
    pub fn swap_staged_compartments(&self, session: &SessionId) -> Result<Swapped> {
        const DOING: &str = "swapping in rebuilt compartments";
        self.require_session(session)?;
        let staged_until = self.staged_until(session)?;
        let summarised_until = self.summarised_until(session)?;
        if staged_until == 0 || staged_until < summarised_until {
            return Err(StoreError::RebuildIncomplete {
                session: session.clone(),
                staged_until,
                needed: summarised_until,
            });
        }
        let conn = self.conn();
        let replaced = conn
            .execute(
                "DELETE FROM compartments WHERE session_id = ?1",
                [session.as_str()],
            )
            .map_err(StoreError::sqlite(DOING))?;
        let installed = conn
            .execute(
                &format!(
                    "INSERT INTO compartments (session_id, {COLUMNS}, created_ms)
                     SELECT session_id, {COLUMNS}, created_ms FROM staged_compartments
                     WHERE session_id = ?1"
                ),
                [session.as_str()],
            )
            .map_err(StoreError::sqlite(DOING))?;
        conn.execute(
            "DELETE FROM staged_compartments WHERE session_id = ?1",
            [session.as_str()],
        )
        .map_err(StoreError::sqlite(DOING))?;
        // A rebuild reads its whole range to the end: none of its compartments is provisional.
        self.settle_provisional(session)?;
        Ok(Swapped {
            replaced: replaced as u64,
            installed: installed as u64,
            covered_until: staged_until,
        })
    }
}
