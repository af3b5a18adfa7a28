//! When a task may run again after its last sweep: its cron, a backoff after a rate limit
//! or an overload, and a stop after the same failure repeats.
//!
//! Pure state over times passed in, so the rules are tested on a simulated clock. A sweep
//! is one pass of the task over the projects; its result is the last failure class when a
//! run failed, or none.

/// The first wait after a rate limit or overload, in milliseconds (doubled per repeat).
pub const BACKOFF_BASE_MS: i64 = 5 * 60 * 1000;

/// The longest backoff wait, in milliseconds: a provider still refusing after hours is
/// better left until the task's next scheduled time.
pub const BACKOFF_MAX_MS: i64 = 4 * 60 * 60 * 1000;

/// How a sweep ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SweepEnd {
    /// Every run ended without a failure.
    Clean,
    /// A run failed with this class; `transient` when waiting may fix it (429, overload).
    Failed {
        /// The failure class (`rate_limited`, `invalid_answer`, ...).
        class: String,
        /// Whether to retry after a backoff rather than at the next scheduled time.
        transient: bool,
    },
}

/// One task's timing state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskClock {
    /// When the task next runs, unix milliseconds; `None` when it never will (off, stopped,
    /// or its cron never matches again).
    pub due_ms: Option<i64>,
    /// The class of the last failures in a row and how many there were.
    pub streak: Option<(String, u32)>,
    /// Backoff retries since the last clean sweep or scheduled time.
    pub retries: u32,
    /// Stopped after identical failures; only a restart starts it again.
    pub stopped: bool,
}

impl TaskClock {
    /// A task first due at `first_due_ms` (its cron's next time after start).
    pub fn new(first_due_ms: Option<i64>) -> Self {
        Self {
            due_ms: first_due_ms,
            streak: None,
            retries: 0,
            stopped: false,
        }
    }

    /// Whether the task should run at `now_ms`.
    pub fn is_due(&self, now_ms: i64) -> bool {
        !self.stopped && self.due_ms.is_some_and(|due| due <= now_ms)
    }

    /// The state after a sweep that ended at `now_ms` as `end`; `next_scheduled_ms` is the
    /// cron's next time after `now_ms`. `stop_after` identical failures in a row stop it.
    pub fn after_sweep(
        &self,
        end: &SweepEnd,
        now_ms: i64,
        next_scheduled_ms: Option<i64>,
        stop_after: u32,
    ) -> Self {
        let SweepEnd::Failed { class, transient } = end else {
            return Self::new(next_scheduled_ms);
        };
        let count = match &self.streak {
            Some((last, count)) if last == class => count.saturating_add(1),
            _ => 1,
        };
        let streak = Some((class.clone(), count));
        if count >= stop_after.max(1) {
            return Self {
                due_ms: None,
                streak,
                retries: self.retries,
                stopped: true,
            };
        }
        if !*transient {
            return Self {
                due_ms: next_scheduled_ms,
                streak,
                retries: 0,
                stopped: false,
            };
        }
        let retry_ms = now_ms.saturating_add(backoff_ms(self.retries));
        Self {
            due_ms: Some(next_scheduled_ms.map_or(retry_ms, |next| next.min(retry_ms))),
            streak,
            retries: self.retries.saturating_add(1),
            stopped: false,
        }
    }
}

/// The wait before backoff retry number `retries` (from 0): doubling from
/// [`BACKOFF_BASE_MS`] up to [`BACKOFF_MAX_MS`].
pub fn backoff_ms(retries: u32) -> i64 {
    BACKOFF_BASE_MS
        .saturating_mul(1_i64 << retries.min(20))
        .min(BACKOFF_MAX_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: i64 = 60_000;
    const DAY: i64 = 24 * 60 * MINUTE;

    fn failed(class: &str, transient: bool) -> SweepEnd {
        SweepEnd::Failed {
            class: class.into(),
            transient,
        }
    }

    #[test]
    fn a_clean_sweep_waits_for_the_next_scheduled_time() {
        let clock = TaskClock::new(Some(1_000));
        assert!(!clock.is_due(999));
        assert!(clock.is_due(1_000));
        let next = clock.after_sweep(&SweepEnd::Clean, 2_000, Some(1_000 + DAY), 3);
        assert_eq!(next, TaskClock::new(Some(1_000 + DAY)));
    }

    #[test]
    fn rate_limits_back_off_doubling_but_never_past_the_next_scheduled_time() {
        let mut clock = TaskClock::new(Some(0));
        let mut now = 0;
        let mut waits = Vec::new();
        for _ in 0..4 {
            clock = clock.after_sweep(&failed("rate_limited", true), now, Some(DAY), 100);
            let due = clock.due_ms.unwrap();
            waits.push((due - now) / MINUTE);
            now = due;
        }
        assert_eq!(waits, [5, 10, 20, 40]);
        let late = clock.after_sweep(&failed("rate_limited", true), DAY - MINUTE, Some(DAY), 100);
        assert_eq!(late.due_ms, Some(DAY));
        assert_eq!(backoff_ms(30), BACKOFF_MAX_MS);
    }

    #[test]
    fn the_same_failure_three_times_stops_the_task_until_restart() {
        let clock = TaskClock::new(Some(0));
        let once = clock.after_sweep(&failed("invalid_answer", false), 10, Some(DAY), 3);
        assert_eq!(once.due_ms, Some(DAY));
        let twice = once.after_sweep(&failed("invalid_answer", false), DAY, Some(2 * DAY), 3);
        let thrice = twice.after_sweep(&failed("invalid_answer", false), 2 * DAY, Some(3 * DAY), 3);
        assert!(thrice.stopped);
        assert!(!thrice.is_due(i64::MAX));
        assert_eq!(thrice.streak, Some(("invalid_answer".into(), 3)));
    }

    #[test]
    fn a_different_failure_or_a_clean_sweep_resets_the_count() {
        let clock = TaskClock::new(Some(0))
            .after_sweep(&failed("timeout", false), 0, Some(DAY), 2)
            .after_sweep(&failed("overloaded", true), DAY, Some(2 * DAY), 2);
        assert!(!clock.stopped);
        assert_eq!(clock.streak, Some(("overloaded".into(), 1)));
        let clean = clock.after_sweep(&SweepEnd::Clean, DAY, Some(2 * DAY), 2);
        assert_eq!(clean.streak, None);
        assert_eq!(clean.retries, 0);
    }
}
