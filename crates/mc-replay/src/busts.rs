//! Finding cache busts and naming their cause.
//!
//! A bust is a call that reads less from the cache than the previous call left cached: the
//! prefix it could have reused was lost. The cause is the strategy's own when it says it
//! rewrote sent history this step; else the cache entry expired if the gap since the previous
//! call exceeded the TTL; else the client changed the prefix itself.

use mc_sim::Ttl;

/// A bust the strategy did not announce and the clock does not explain.
pub const PREFIX_CHANGED: &str = "prefix-changed";

/// A bust after a gap longer than the cache lifetime.
pub const TTL_EXPIRED: &str = "ttl-expired";

/// The cache state one session's calls leave behind, call after call.
#[derive(Debug, Clone, Default)]
pub struct BustTracker {
    /// Tokens of the prefix the previous call read or wrote.
    cached_tokens: u64,
    /// When the previous call was made.
    last_at_ms: Option<u64>,
}

/// What the cache did on one successful call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheOutcome {
    /// When the call was made (simulated ms).
    pub at_ms: u64,
    /// Tokens read from the cache.
    pub cache_read: u64,
    /// Tokens written to the cache (5m and 1h together).
    pub cache_write: u64,
}

impl BustTracker {
    /// A session with nothing cached.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one call; returns the bust's cause if it was one. `strategy_cause` is what the
    /// strategy said it rewrote this step.
    pub fn observe(
        &mut self,
        outcome: CacheOutcome,
        strategy_cause: Option<&'static str>,
    ) -> Option<&'static str> {
        let busted = outcome.cache_read < self.cached_tokens;
        let expired = self.last_at_ms.is_some_and(|last| {
            outcome.at_ms.saturating_sub(last) >= Ttl::FiveMinutes.duration_ms()
        });
        self.cached_tokens = outcome.cache_read + outcome.cache_write;
        self.last_at_ms = Some(outcome.at_ms);
        let cause = match strategy_cause {
            Some(cause) => cause,
            None if expired => TTL_EXPIRED,
            None => PREFIX_CHANGED,
        };
        busted.then_some(cause)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(at_ms: u64, cache_read: u64, cache_write: u64) -> CacheOutcome {
        CacheOutcome {
            at_ms,
            cache_read,
            cache_write,
        }
    }

    #[test]
    fn names_each_cause() {
        let mut tracker = BustTracker::new();
        assert_eq!(tracker.observe(call(0, 0, 5_000), None), None);
        assert_eq!(tracker.observe(call(1_000, 5_000, 1_000), None), None);
        // Read less than the 6,000 left cached, with the strategy saying why.
        assert_eq!(
            tracker.observe(call(2_000, 3_000, 500), Some("window")),
            Some("window")
        );
        // Read less again, six minutes later.
        assert_eq!(
            tracker.observe(call(362_000, 0, 3_600), None),
            Some(TTL_EXPIRED)
        );
        assert_eq!(
            tracker.observe(call(363_000, 1_000, 0), None),
            Some(PREFIX_CHANGED)
        );
        // Reading everything cached is never a bust, whatever the strategy says.
        assert_eq!(
            tracker.observe(call(364_000, 1_000, 0), Some("window")),
            None
        );
    }
}
