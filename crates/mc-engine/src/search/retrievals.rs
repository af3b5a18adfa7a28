//! Which memories a search handed to its caller, recorded as use.
//!
//! The dreamer's `archive_stale_memories` retires memories nothing has needed for a long
//! time; a memory the agent keeps finding through `ctx_search` is needed, whether or not the
//! head still shows it. Only what the caller was given counts (the fused, cut results), not
//! every candidate a signal scored.

use mc_store::{KnowledgeSource, Store, StoreError};

use super::{HitPlace, SearchHit, SearchRequest, memory_project};

/// Records that `hits`, the answer to `request`, showed their memories at `now_ms`.
/// Returns how many were counted (none when the search had no project).
pub fn record_retrieved_memories(
    store: &Store,
    request: &SearchRequest,
    hits: &[SearchHit],
    now_ms: i64,
) -> Result<u64, StoreError> {
    let Some(project) = memory_project(request) else {
        return Ok(0);
    };
    let ids: Vec<u64> = hits
        .iter()
        .filter_map(|hit| match &hit.place {
            HitPlace::Memory { id, .. } => Some(*id),
            HitPlace::Messages { .. } | HitPlace::Commit { .. } | HitPlace::Note { .. } => None,
        })
        .collect();
    if ids.is_empty() {
        return Ok(0);
    }
    // A team store's memories are not rows of the local table: their use is kept beside
    // the cache, under the team's ids, and queued in the same transaction for the team
    // store's background sync to send in batches (never waited for here).
    store.write(|tx| match request.knowledge {
        KnowledgeSource::Local => tx.record_memory_retrievals(project, &ids, now_ms),
        KnowledgeSource::TeamCache => tx.record_team_memory_retrievals(project, &ids, now_ms),
    })
}
