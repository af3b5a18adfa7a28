//! The provider's cache: which prefixes are stored, and until when.

use std::collections::HashMap;

use crate::ttl::Ttl;

/// One stored prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    /// First instant (simulated ms) at which the entry is gone: `now >= expires_at_ms` misses.
    expires_at_ms: u64,
    ttl: Ttl,
}

/// Every prefix the simulated provider holds, keyed by [`crate::PromptBlock::prefix`].
///
/// One state stands for one organisation's cache: requests that share it share hits. Expired
/// entries stay until [`CacheState::evict_expired`] runs but never hit, so eviction only
/// bounds memory and never changes a usage figure.
#[derive(Debug, Clone, Default)]
pub struct CacheState {
    entries: HashMap<[u8; 32], Entry>,
}

impl CacheState {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Drops every entry expired at `now_ms`.
    pub fn evict_expired(&mut self, now_ms: u64) {
        self.entries.retain(|_, entry| entry.expires_at_ms > now_ms);
    }

    /// How many entries are stored, expired or not.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// When the entry for `prefix` expires, if it is live at `now_ms`.
    pub fn expires_at_ms(&self, prefix: &[u8; 32], now_ms: u64) -> Option<u64> {
        self.live(prefix, now_ms).map(|entry| entry.expires_at_ms)
    }

    /// Whether `prefix` is stored and unexpired at `now_ms`.
    pub fn is_cached(&self, prefix: &[u8; 32], now_ms: u64) -> bool {
        self.live(prefix, now_ms).is_some()
    }

    fn live(&self, prefix: &[u8; 32], now_ms: u64) -> Option<&Entry> {
        self.entries
            .get(prefix)
            .filter(|entry| entry.expires_at_ms > now_ms)
    }

    /// Restarts a live entry's lifetime at `now_ms`. A request that marks the prefix with a
    /// longer TTL than it was written with upgrades it; a shorter one never cuts it down.
    pub(crate) fn refresh(&mut self, prefix: &[u8; 32], ttl: Option<Ttl>, now_ms: u64) {
        if let Some(entry) = self.entries.get_mut(prefix) {
            entry.ttl = ttl.map_or(entry.ttl, |ttl| ttl.max(entry.ttl));
            entry.expires_at_ms = now_ms.saturating_add(entry.ttl.duration_ms());
        }
    }

    /// Stores `prefix` for `ttl` from `now_ms`, replacing any expired entry.
    pub(crate) fn write(&mut self, prefix: [u8; 32], ttl: Ttl, now_ms: u64) {
        let expires_at_ms = now_ms.saturating_add(ttl.duration_ms());
        self.entries.insert(prefix, Entry { expires_at_ms, ttl });
    }
}
