//! Search's date bounds as people type them: `2026-11-30` (a whole day, UTC) or an RFC 3339
//! instant (`2026-11-30T14:00:00Z`, `2026-11-30T15:00:00+01:00`), as unix milliseconds. One
//! parser for the command line and the agent's tool, so both accept the same words.

use chrono::{DateTime, NaiveDate};

/// Which end of a day a date-only bound stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DayEnd {
    /// The first instant of the day: a `since` bound.
    Start,
    /// The first instant of the next day: an exclusive `until` bound that keeps the day.
    After,
}

/// `text` as unix milliseconds, or a message saying which forms are accepted.
pub fn date_bound_ms(text: &str, end: DayEnd) -> Result<i64, String> {
    let text = text.trim();
    if let Ok(instant) = DateTime::parse_from_rfc3339(text) {
        return Ok(instant.timestamp_millis());
    }
    let bad = || {
        format!(
            "`{text}` is not a date: use YYYY-MM-DD or an RFC 3339 time such as 2026-11-30T14:00:00Z"
        )
    };
    let day = NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| bad())?;
    let day = match end {
        DayEnd::Start => day,
        DayEnd::After => day.succ_opt().ok_or_else(bad)?,
    };
    let midnight = day.and_hms_opt(0, 0, 0).ok_or_else(bad)?;
    Ok(midnight.and_utc().timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-30T00:00:00Z.
    const NOV_30: i64 = 1_795_996_800_000;

    #[test]
    fn a_day_spans_from_its_midnight_to_the_next() {
        assert_eq!(date_bound_ms("2026-11-30", DayEnd::Start), Ok(NOV_30));
        assert_eq!(
            date_bound_ms("2026-11-30", DayEnd::After),
            Ok(NOV_30 + 86_400_000)
        );
    }

    #[test]
    fn instants_keep_their_offset() {
        assert_eq!(
            date_bound_ms("2026-11-30T01:00:00+01:00", DayEnd::Start),
            Ok(NOV_30)
        );
    }

    #[test]
    fn nonsense_names_the_accepted_forms() {
        let err = date_bound_ms("yesterday", DayEnd::Start).unwrap_err();
        assert!(err.contains("YYYY-MM-DD"), "{err}");
    }
}
