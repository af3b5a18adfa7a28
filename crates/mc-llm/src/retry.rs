//! How long each attempt may take, how many there are, and how long to wait between them.

use std::time::Duration;

/// The per-endpoint attempt budget.
///
/// Background calls never block a request (DESIGN §5), so the defaults favour finishing over
/// speed; a failure is retried later by the caller anyway (DESIGN §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per endpoint, the first included. Default 3.
    pub max_attempts: u32,
    /// Time allowed for one attempt, from connecting to the last byte of the answer.
    /// Default 120 s: a structured summary of thousands of tokens from a small local model
    /// can take a minute or more.
    pub attempt_timeout: Duration,
    /// The wait after the first failed attempt, doubled after each further one. Default 1 s.
    pub base_backoff: Duration,
    /// The most the doubling may reach. Default 30 s.
    pub max_backoff: Duration,
    /// The most a provider's `retry-after` is honoured for; beyond it the fallback chain is
    /// the better bet. Default 60 s.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            attempt_timeout: Duration::from_secs(120),
            base_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait after failed attempt number `attempt` (1-based).
    ///
    /// A provider's `retry-after` wins (capped at `max_retry_after`). Otherwise the exponential
    /// step is jittered into its upper half, `[step/2, step]`, from `seed`, so several sessions'
    /// historians hitting one rate limit do not retry in lockstep yet never retry at once.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>, seed: u64) -> Duration {
        if let Some(asked) = retry_after {
            return asked.min(self.max_retry_after);
        }
        let doublings = attempt.saturating_sub(1).min(31);
        let step = self
            .base_backoff
            .saturating_mul(1 << doublings)
            .min(self.max_backoff);
        let half = step / 2;
        let spread_nanos = u64::try_from((step - half).as_nanos()).unwrap_or(u64::MAX);
        let jitter = match spread_nanos {
            0 => 0,
            spread => splitmix64(seed) % (spread + 1),
        };
        half + Duration::from_nanos(jitter)
    }
}

/// A seed for [`RetryPolicy::delay`] from the clock's nanoseconds: different enough between
/// processes and calls, and keeps `rand` out of the dependency tree.
pub(crate) fn clock_seed(salt: u64) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    u64::from(nanos) ^ salt.rotate_left(32)
}

/// One step of SplitMix64: a well-mixed 64-bit value from any seed.
fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_jitter_and_caps() {
        let policy = RetryPolicy::default();
        for seed in 0..200 {
            for (attempt, step_s) in [(1, 1), (2, 2), (3, 4), (6, 30), (40, 30)] {
                let step = Duration::from_secs(step_s);
                let delay = policy.delay(attempt, None, seed);
                assert!(delay >= step / 2 && delay <= step, "{attempt} {delay:?}");
            }
        }
    }

    #[test]
    fn jitter_spreads_across_seeds() {
        let policy = RetryPolicy::default();
        let delays: std::collections::BTreeSet<Duration> =
            (0..50).map(|seed| policy.delay(2, None, seed)).collect();
        assert!(delays.len() > 40, "{}", delays.len());
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_cap() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(7)), 1),
            Duration::from_secs(7)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(600)), 1),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn zero_backoff_is_zero() {
        let policy = RetryPolicy {
            base_backoff: Duration::ZERO,
            ..RetryPolicy::default()
        };
        assert_eq!(policy.delay(3, None, 9), Duration::ZERO);
    }
}
