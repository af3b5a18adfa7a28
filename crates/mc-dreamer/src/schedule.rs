//! When a task runs next: its cron expression read on a clock passed in.
//!
//! Expressions are read in UTC: the scheduler has no time-zone database, and a schedule that
//! moved with daylight saving would run twice or not at all on those nights. The caller gives
//! the time, so a test walks a simulated clock through days in microseconds.

use chrono::{DateTime, Utc};
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use mc_core::config::TaskSchedule;

use crate::error::{DreamerError, Result};

/// A parsed task schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    cron: Cron,
}

impl Schedule {
    /// Reads a task's schedule; `None` when it is off. The config loader has checked the
    /// expression already, so an error here means the config was built by hand.
    pub fn of(task: &'static str, schedule: &TaskSchedule) -> Result<Option<Self>> {
        let TaskSchedule::Cron(expr) = schedule else {
            return Ok(None);
        };
        let parser = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .year(Year::Disallowed)
            .build();
        let cron = parser
            .parse(expr)
            .map_err(|error| DreamerError::BadSchedule {
                task,
                expr: expr.clone(),
                reason: error.to_string(),
            })?;
        Ok(Some(Self { cron }))
    }

    /// The first time strictly after `now_ms` the expression matches, unix milliseconds, or
    /// `None` when it never matches again (a date that does not exist, like 30 February).
    pub fn next_after(&self, now_ms: i64) -> Option<i64> {
        let now: DateTime<Utc> = DateTime::from_timestamp_millis(now_ms)?;
        self.cron
            .find_next_occurrence(&now, false)
            .ok()
            .map(|next| next.timestamp_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-12-05 21:00:00 UTC.
    const EVENING: i64 = 1_796_504_400_000;
    const HOUR: i64 = 3_600_000;

    fn cron(expr: &str) -> Schedule {
        Schedule::of("verify_memories", &TaskSchedule::Cron(expr.into()))
            .unwrap()
            .unwrap()
    }

    #[test]
    fn a_nightly_schedule_runs_at_its_hour_each_day() {
        let nightly = cron("30 3 * * *");
        let first = nightly.next_after(EVENING).unwrap();
        assert_eq!(first, EVENING + 6 * HOUR + HOUR / 2);
        assert_eq!(nightly.next_after(first), Some(first + 24 * HOUR));
        assert_eq!(nightly.next_after(first - 1), Some(first));
    }

    #[test]
    fn every_half_hour_and_off_and_impossible_dates() {
        let often = cron("*/30 * * * *");
        assert_eq!(often.next_after(EVENING), Some(EVENING + HOUR / 2));
        assert!(
            Schedule::of("verify_memories", &TaskSchedule::Off)
                .unwrap()
                .is_none()
        );
        assert_eq!(cron("0 0 30 2 *").next_after(EVENING), None);
        let error = Schedule::of("verify_memories", &TaskSchedule::Cron("61 * * * *".into()))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("dreamer.schedules.verify_memories"),
            "{error}"
        );
    }
}
