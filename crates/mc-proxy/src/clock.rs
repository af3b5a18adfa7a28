//! The proxy's two readings of time: wall-clock stamps for the store, and elapsed
//! milliseconds for latencies.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 for a clock set before 1970).
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}

/// [`unix_ms`] as the store's signed stamps.
pub fn now_ms() -> i64 {
    i64::try_from(unix_ms()).unwrap_or(i64::MAX)
}

/// Milliseconds since `start`, saturating.
pub fn elapsed_ms(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}
