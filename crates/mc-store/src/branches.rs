//! Branches of a conversation: a session and the forks made from it.
//!
//! When a client rewinds or edits a message, the proxy forks the session into `ID~N`
//! (see the engine's `fork`). A later request of that conversation may extend any of the
//! branches, so resolution looks at all of them.

use mc_core::{ContentHash, SessionId};

use crate::error::{Result, StoreError};
use crate::sessions::SessionRecord;
use crate::store::ReadTx;

/// The separator between a session id and its branch number.
pub const BRANCH_SEPARATOR: char = '~';

/// One branch and where its log ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchHead {
    /// The branch's session.
    pub session: SessionRecord,
    /// How many messages it holds.
    pub count: u64,
    /// The chain link of its last message, `None` when it holds none.
    pub head: Option<ContentHash>,
}

impl ReadTx<'_> {
    /// Session `base` and every `base~N` branch of it, most recently seen first.
    pub fn branches(&self, base: &SessionId) -> Result<Vec<BranchHead>> {
        const DOING: &str = "listing branches";
        let prefix = format!("{base}{BRANCH_SEPARATOR}");
        let ids: Vec<String> = {
            let mut statement = self
                .conn()
                .prepare_cached(
                    "SELECT id FROM sessions
                     WHERE id = ?1 OR substr(id, 1, length(?2)) = ?2
                     ORDER BY last_seen_ms DESC, id",
                )
                .map_err(StoreError::sqlite(DOING))?;
            let rows = statement
                .query_map((base.as_str(), prefix.as_str()), |row| row.get(0))
                .map_err(StoreError::sqlite(DOING))?;
            rows.collect::<rusqlite::Result<_>>()
                .map_err(StoreError::sqlite(DOING))?
        };
        let mut branches = Vec::with_capacity(ids.len());
        for id in ids {
            // Ids were validated when written; one that no longer validates is skipped.
            let Ok(id) = SessionId::new(id) else {
                continue;
            };
            let Some(session) = self.get_session(&id)? else {
                continue;
            };
            branches.push(BranchHead {
                count: self.message_count(&id)?,
                head: self.chain_head(&id)?,
                session,
            });
        }
        Ok(branches)
    }
}
