//! Branches of a conversation: a session and the forks made from it.
//!
//! When a client rewinds or edits a message, the proxy forks the session into `ID~N`
//! (see the engine's `fork`). A later request of that conversation may extend any of the
//! branches, so resolution looks at all of them.

use mc_core::{ContentHash, SessionId};

use crate::error::{Result, StoreError};
use crate::messages::hash_from_column;
use crate::sessions::{SessionRecord, SessionRow};
use crate::store::ReadTx;

/// The separator between a session id and its branch number.
pub const BRANCH_SEPARATOR: char = '~';

/// One character past [`BRANCH_SEPARATOR`]: every `base~…` id sorts before `base` followed by
/// it, so `[base, base + BRANCH_END)` is an index range holding the base and all its branches.
const BRANCH_END: char = '\u{7f}';

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
    /// Session `base` and every `base~N` branch of it (a fork, numbered), most recently seen
    /// first. A session a client named `base~…` itself is not a branch of `base`.
    ///
    /// One statement, run on every managed call: a range of the sessions' key (not a scan of
    /// every session) joined to each branch's last message.
    pub fn branches(&self, base: &SessionId) -> Result<Vec<BranchHead>> {
        const DOING: &str = "listing branches";
        let prefix = format!("{base}{BRANCH_SEPARATOR}");
        let end = format!("{base}{BRANCH_END}");
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT s.id, s.host, s.project, s.parent_id, s.fork_ordinal, s.created_ms,
                        s.last_seen_ms, s.mode, s.spawned_by, m.ordinal, m.chain
                 FROM sessions AS s
                 LEFT JOIN messages AS m ON m.session_id = s.id
                     AND m.ordinal = (SELECT max(ordinal) FROM messages WHERE session_id = s.id)
                 WHERE s.id >= ?1 AND s.id < ?3
                     AND (s.id = ?1 OR substr(s.id, 1, length(?2)) = ?2)
                 ORDER BY s.last_seen_ms DESC, s.id",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map((base.as_str(), prefix.as_str(), end.as_str()), |row| {
                let last: Option<(u64, Vec<u8>)> = match row.get::<_, Option<u64>>(9)? {
                    Some(ordinal) => Some((ordinal, row.get(10)?)),
                    None => None,
                };
                Ok((SessionRow::from_row(row)?, last))
            })
            .map_err(StoreError::sqlite(DOING))?;
        let mut branches = Vec::new();
        for row in rows {
            let (session, last) = row.map_err(StoreError::sqlite(DOING))?;
            // Ids were validated when written; one that no longer validates is skipped.
            if SessionId::new(session.id.as_str()).is_err() {
                continue;
            }
            // A client may name a session `base~` or `base~2` itself: only a fork (it has a
            // parent) numbered after the separator is a branch of `base`.
            if session.id != base.as_str() && !is_fork_name(&session, &prefix) {
                continue;
            }
            let session = session.decode()?;
            let (count, head) = match last {
                Some((ordinal, chain)) => {
                    let head = hash_from_column("chain", &chain).map_err(|problem| {
                        StoreError::CorruptRow {
                            session: session.id.clone(),
                            ordinal,
                            problem,
                        }
                    })?;
                    (ordinal + 1, Some(head))
                }
                None => (0, None),
            };
            branches.push(BranchHead {
                session,
                count,
                head,
            });
        }
        Ok(branches)
    }
}

/// Whether the stored session `row` is a fork named `prefix` and a number.
fn is_fork_name(row: &SessionRow, prefix: &str) -> bool {
    row.parent_id.is_some()
        && row.id.strip_prefix(prefix).is_some_and(|number| {
            !number.is_empty() && number.bytes().all(|byte| byte.is_ascii_digit())
        })
}
