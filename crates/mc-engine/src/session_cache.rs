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
//!
//! Each cache is bounded by the bytes its values hold, not by a count of sessions: a proxy
//! runs all day, and one long session's values can outweigh a hundred short ones'. Past its
//! budget a cache forgets the least recently used sessions; a value larger than the whole
//! budget is not kept at all. Forgetting costs the next pass of that session time, never a
//! different decision or different bytes.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use mc_core::SessionId;

use mc_core::HeldBytes;

/// Kept values within a byte budget, least recently used evicted first.
#[derive(Debug)]
pub struct SessionCache<T> {
    inner: Mutex<Kept<T>>,
    budget_bytes: usize,
}

#[derive(Debug)]
struct Kept<T> {
    /// Per session: when it was last put back (a counter), its size, and its value.
    by_session: BTreeMap<SessionId, Slot<T>>,
    /// The sum of the kept values' sizes.
    bytes: usize,
    clock: u64,
}

#[derive(Debug)]
struct Slot<T> {
    stamp: u64,
    bytes: usize,
    value: T,
}

impl<T> SessionCache<T> {
    /// An empty cache that keeps at most `budget_bytes` (as [`HeldBytes`] counts them).
    pub fn with_budget(budget_bytes: usize) -> Self {
        Self {
            inner: Mutex::new(Kept {
                by_session: BTreeMap::new(),
                bytes: 0,
                clock: 0,
            }),
            budget_bytes,
        }
    }

    /// The session's value, taken out while a pass uses it; `None` when none is kept.
    pub fn take(&self, session: &SessionId) -> Option<T> {
        let mut kept = self.lock();
        let slot = kept.by_session.remove(session)?;
        kept.bytes -= slot.bytes;
        Some(slot.value)
    }

    /// A copy of the session's value, left in place.
    pub fn get(&self, session: &SessionId) -> Option<T>
    where
        T: Clone,
    {
        self.lock()
            .by_session
            .get(session)
            .map(|slot| slot.value.clone())
    }

    /// The bytes the kept values hold now; never above the budget.
    pub fn held_bytes(&self) -> usize {
        self.lock().bytes
    }

    /// The table; a thread that panicked while holding it left whole entries (inserts and
    /// removals are atomic from the map's view, and the byte sum is updated with them), so a
    /// poisoned lock is used as is.
    fn lock(&self) -> MutexGuard<'_, Kept<T>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T: HeldBytes> SessionCache<T> {
    /// Keeps `value` for the session's next pass, after its pass committed, forgetting the
    /// least recently used sessions until the cache is within its budget again.
    pub fn put(&self, session: &SessionId, value: T) {
        let bytes = value.held_bytes();
        let mut kept = self.lock();
        if let Some(old) = kept.by_session.remove(session) {
            kept.bytes -= old.bytes;
        }
        if bytes > self.budget_bytes {
            return;
        }
        kept.clock += 1;
        let stamp = kept.clock;
        kept.bytes += bytes;
        kept.by_session.insert(
            session.clone(),
            Slot {
                stamp,
                bytes,
                value,
            },
        );
        while kept.bytes > self.budget_bytes {
            let oldest = kept
                .by_session
                .iter()
                .min_by_key(|(_, slot)| slot.stamp)
                .map(|(session, _)| session.clone());
            let Some(evicted) = oldest.and_then(|session| kept.by_session.remove(&session)) else {
                break;
            };
            kept.bytes -= evicted.bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value of a given size.
    #[derive(Debug)]
    struct Blob(usize);

    impl HeldBytes for Blob {
        fn held_bytes(&self) -> usize {
            self.0
        }
    }

    fn id(name: &str) -> SessionId {
        SessionId::new(name).unwrap()
    }

    #[test]
    fn never_holds_more_than_its_budget_and_forgets_the_least_recently_used() {
        let cache = SessionCache::with_budget(1000);
        for n in 0..50 {
            cache.put(&id(&format!("s{n}")), Blob(300));
            assert!(cache.held_bytes() <= 1000, "{}", cache.held_bytes());
        }
        assert_eq!(cache.held_bytes(), 900);
        // The three newest are kept; taking one and putting it back makes it the newest.
        assert!(cache.take(&id("s46")).is_none());
        let value = cache.take(&id("s47")).unwrap();
        cache.put(&id("s47"), value);
        cache.put(&id("s50"), Blob(300));
        assert!(cache.take(&id("s48")).is_none(), "least recently used");
        assert!(cache.take(&id("s47")).is_some());
    }

    #[test]
    fn a_value_larger_than_the_budget_is_not_kept_and_replaces_nothing_stale() {
        let cache = SessionCache::with_budget(1000);
        cache.put(&id("a"), Blob(400));
        cache.put(&id("b"), Blob(400));
        cache.put(&id("a"), Blob(2000));
        assert_eq!(cache.held_bytes(), 400);
        assert!(
            cache.take(&id("a")).is_none(),
            "an old value must not survive"
        );
        assert_eq!(cache.take(&id("b")).map(|v| v.0), Some(400));
        assert_eq!(cache.held_bytes(), 0);
    }
}
