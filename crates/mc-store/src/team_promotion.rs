//! The historian's facts promoted to a team's project memories.
//!
//! Without a team store, publishing a historian run promotes the project's facts straight into
//! the local `memories` table ([`WriteTx::promote_historian_facts`]). With one, the project's
//! memories live in PostgreSQL, so the same facts must take the path every other change of
//! project knowledge takes: a write queued in `team_outbox`, in the publishing transaction
//! itself (a crash cannot keep the compartments and lose their facts), that the team store's
//! sync sends and the server applies once by its write id.
//!
//! The write id of a fact is derived from its project and its key, not drawn at random: a
//! fact promoted again before the cache has caught up with its first promotion, by this
//! proxy or another, carries the same id, and the server, having recorded it, applies it
//! once. The rules are those of the local promotion, read against the team cache: a fact a
//! live memory already states is not sent again but counts as that memory stated again (its
//! use, queued for the team store when the historian saw it later than recorded, keeps
//! `archive_stale_memories` on every machine from retiring it), and a fact the team retired
//! is not brought back.

use std::collections::{HashMap, HashSet};

use mc_core::ProjectId;
use mc_core::historian::fact_key;

use crate::error::Result;
use crate::historian_rows::history_scope_of_project;
use crate::knowledge::ProjectKnowledge;
use crate::memory_rows::{MemorySource, MemoryStatus};
use crate::store::WriteTx;
use crate::team_cache::TeamCache;
use crate::team_outbox::TeamWrite;

/// The write id of the team write promoting the fact with `key` to `project`'s memories.
pub fn historian_write_id(project: &ProjectId, key: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"mc-historian-fact-v1\0");
    hasher.update(project.as_str().as_bytes());
    hasher.update(b"\0");
    hasher.update(key.as_bytes());
    let hex = hasher.finalize().to_hex();
    format!("historian-{}", &hex[..32])
}

impl WriteTx<'_> {
    /// Queues, for the team store, each fact the historian stored for the project that the
    /// team's cached memories neither state nor retired, and the restatement of each they
    /// state; returns how many writes it queued (a write already waiting under the same id
    /// counts as queued, once).
    pub fn queue_historian_facts_for_team(&self, project: &ProjectId, now_ms: i64) -> Result<u64> {
        let facts = self.historian_facts(&history_scope_of_project(project.as_str()))?;
        if facts.is_empty() {
            return Ok(0);
        }
        let mut live = HashMap::new();
        let mut retired = HashSet::new();
        for memory in TeamCache::new(self).memories(
            project,
            &[
                MemoryStatus::Active,
                MemoryStatus::Permanent,
                MemoryStatus::Archived,
            ],
        )? {
            let key = fact_key(&memory.record.content);
            match memory.record.status {
                MemoryStatus::Active | MemoryStatus::Permanent => {
                    live.insert(key, memory.id);
                }
                MemoryStatus::Archived => {
                    retired.insert(key);
                }
            }
        }
        let mut queued = 0;
        for fact in facts {
            let key = fact_key(&fact.content);
            if let Some(&id) = live.get(&key) {
                self.note_team_restated(project, id, fact.last_ms)?;
                continue;
            }
            if key.is_empty() || retired.contains(&key) {
                continue;
            }
            let write = TeamWrite::Add {
                category: fact.category,
                content: fact.content.trim().to_owned(),
                source: MemorySource::Historian,
                permanent: false,
            };
            self.queue_team_write(&historian_write_id(project, &key), project, &write, now_ms)?;
            queued += 1;
        }
        Ok(queued)
    }
}
