//! The reclaim lanes' fingerprint index of each recent session, kept in memory between passes.
//!
//! Fingerprinting every tool output of a session on every pass was most of a pass's CPU;
//! with the index a pass fingerprints only what is new to it. The index is a cache, not
//! state: planning with it decides exactly what planning without it does, so it is never
//! stored, a restart simply rebuilds it on the next pass, and a pass that fails drops it
//! (its transaction rolled back, so tags it saw may be assigned again to other content).

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use mc_core::SessionId;
use mc_core::reclaim::{FingerprintIndex, ReclaimConfig};

/// How many sessions keep their index. Default 16: a proxy serves a handful of live
/// sessions at a time, and an index holds about the size of the session's shown tool output.
const KEPT_SESSIONS: usize = 16;

/// The kept indexes, least recently used evicted first.
#[derive(Debug, Default)]
pub(crate) struct KeptIndexes {
    inner: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    /// Per session: when it was last put back (a counter), and its index.
    by_session: BTreeMap<SessionId, (u64, FingerprintIndex)>,
    clock: u64,
}

impl KeptIndexes {
    /// The session's index, taken out while a pass uses it; a fresh one when none is kept.
    pub fn take(&self, session: &SessionId, config: &ReclaimConfig) -> FingerprintIndex {
        self.lock()
            .by_session
            .remove(session)
            .map_or_else(|| FingerprintIndex::new(config), |(_, index)| index)
    }

    /// Keeps `index` for the session's next pass, after its pass committed.
    pub fn put(&self, session: &SessionId, index: FingerprintIndex) {
        let mut kept = self.lock();
        kept.clock += 1;
        let stamp = kept.clock;
        kept.by_session.insert(session.clone(), (stamp, index));
        while kept.by_session.len() > KEPT_SESSIONS {
            let oldest = kept
                .by_session
                .iter()
                .min_by_key(|(_, (stamp, _))| *stamp)
                .map(|(session, _)| session.clone());
            match oldest {
                Some(session) => kept.by_session.remove(&session),
                None => break,
            };
        }
    }

    /// The table; a thread that panicked while holding it left whole entries (inserts and
    /// removals are atomic from the map's view), so a poisoned lock is used as is.
    fn lock(&self) -> MutexGuard<'_, Kept> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
