//! Per-session values kept in memory between passes: the reclaim lanes' fingerprint index,
//! the token counts of the session's parts, the tag index and the rendered tail (and, in the
//! proxy, the encoded messages of the last upstream request).
//!
//! Both are caches, not state: planning with them decides exactly what planning without them
//! does, so they are never stored, a restart rebuilds them on the next pass, and a pass that
//! fails drops them (its transaction rolled back, so what it saw may be stored differently
//! by the next pass). A pass takes its session's value out and puts it back only after its
//! transaction committed.
//!
//! Fingerprinting every tool output and counting every part's tokens on every pass was most
//! of a pass's CPU; with these a pass works only on what is new to it.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use mc_core::SessionId;

/// How many sessions keep their values. Default 16: a proxy serves a handful of live
/// sessions at a time, and each value is about the size of the session's index or smaller.
const KEPT_SESSIONS: usize = 16;

/// Kept values, least recently used evicted first.
#[derive(Debug)]
pub struct SessionCache<T> {
    inner: Mutex<Kept<T>>,
}

#[derive(Debug)]
struct Kept<T> {
    /// Per session: when it was last put back (a counter), and its value.
    by_session: BTreeMap<SessionId, (u64, T)>,
    clock: u64,
}

impl<T> Default for SessionCache<T> {
    fn default() -> Self {
        Self {
            inner: Mutex::new(Kept {
                by_session: BTreeMap::new(),
                clock: 0,
            }),
        }
    }
}

impl<T> SessionCache<T> {
    /// The session's value, taken out while a pass uses it; `None` when none is kept.
    pub fn take(&self, session: &SessionId) -> Option<T> {
        self.lock()
            .by_session
            .remove(session)
            .map(|(_, value)| value)
    }

    /// A copy of the session's value, left in place.
    pub fn get(&self, session: &SessionId) -> Option<T>
    where
        T: Clone,
    {
        self.lock()
            .by_session
            .get(session)
            .map(|(_, value)| value.clone())
    }

    /// Keeps `value` for the session's next pass, after its pass committed.
    pub fn put(&self, session: &SessionId, value: T) {
        let mut kept = self.lock();
        kept.clock += 1;
        let stamp = kept.clock;
        kept.by_session.insert(session.clone(), (stamp, value));
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
    fn lock(&self) -> MutexGuard<'_, Kept<T>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
