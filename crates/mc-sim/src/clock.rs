//! Where the simulated provider reads the time.
//!
//! Cache lifetimes (5 minutes, 1 hour) are the whole point of the simulator, so time must be
//! controllable: a server that real clients talk to uses the [`WallClock`], while tests and
//! replays use a [`SimClock`] that only moves when told to, so an hour of cache life passes
//! in one call and no test sleeps.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of the current time in milliseconds.
///
/// Only differences matter to the cache model (TTL expiry); the origin is the clock's choice.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Milliseconds since the clock's origin; never decreases for the clocks in this crate
    /// unless a test calls [`SimClock::set`] backwards.
    fn now_ms(&self) -> u64;
}

/// The system clock: milliseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, Default)]
pub struct WallClock;

impl Clock for WallClock {
    fn now_ms(&self) -> u64 {
        // A system clock set before 1970 reads as the epoch rather than failing a request.
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| {
                u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
            })
    }
}

/// A clock that moves only when told to. Clones share one time, so a test keeps a clone and
/// advances the time the server sees.
#[derive(Debug, Clone, Default)]
pub struct SimClock {
    now_ms: Arc<AtomicU64>,
}

impl SimClock {
    /// A clock reading `start_ms`.
    pub fn new(start_ms: u64) -> Self {
        Self {
            now_ms: Arc::new(AtomicU64::new(start_ms)),
        }
    }

    /// Moves the time forward by `ms` (saturating at `u64::MAX`).
    pub fn advance(&self, ms: u64) {
        // fetch_update with a closure that always returns Some cannot fail.
        let _ = self
            .now_ms
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(ms))
            });
    }

    /// Sets the time to `ms`, e.g. to a recorded request's timestamp.
    pub fn set(&self, ms: u64) {
        self.now_ms.store(ms, Ordering::SeqCst);
    }
}

impl Clock for SimClock {
    fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_clock_clones_share_time() {
        let clock = SimClock::new(1_000);
        let seen_by_server = clock.clone();
        clock.advance(300_000);
        assert_eq!(seen_by_server.now_ms(), 301_000);
        clock.set(5);
        assert_eq!(seen_by_server.now_ms(), 5);
        clock.set(u64::MAX - 1);
        clock.advance(10);
        assert_eq!(seen_by_server.now_ms(), u64::MAX);
    }

    #[test]
    fn wall_clock_is_after_2024() {
        assert!(WallClock.now_ms() > 1_700_000_000_000);
    }
}
