//! How long the store keeps a session after its last activity.

use serde::Serialize;

use super::units::Bounds;

/// The retention section: `magic-context prune`, and `serve` once a day, remove the sessions
/// last active longer ago than this (their raw log, engine state, ledger rows, compartments
/// and vectors); project memories stay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RetentionConfig {
    /// Days a session is kept after its last request. 90 days outlasts any pause in work
    /// someone comes back to, while a store of daily use stops growing after a season.
    pub session_days: u32,
}

impl RetentionConfig {
    /// Accepted range of [`Self::session_days`]: at least a day, at most a hundred years.
    pub const SESSION_DAYS: Bounds = Bounds::count(1, 36_500, "days");

    /// The unix time (ms) before which a session last active then counts as expired.
    pub fn session_cutoff_ms(&self, now_ms: i64) -> i64 {
        cutoff_ms(now_ms, self.session_days)
    }
}

/// `days` before `now_ms`, in unix milliseconds.
pub fn cutoff_ms(now_ms: i64, days: u32) -> i64 {
    const DAY_MS: i64 = 24 * 60 * 60 * 1000;
    now_ms.saturating_sub(i64::from(days).saturating_mul(DAY_MS))
}

impl Default for RetentionConfig {
    fn default() -> Self {
        Self { session_days: 90 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cutoff_is_the_days_before_now() {
        let config = RetentionConfig { session_days: 2 };
        let day_ms = 24 * 60 * 60 * 1000;
        assert_eq!(config.session_cutoff_ms(10 * day_ms), 8 * day_ms);
        assert_eq!(config.session_cutoff_ms(i64::MIN), i64::MIN);
    }
}
