//! Dates on the command line: `2026-11-30` (a whole day, UTC) or an RFC 3339 instant
//! (`2026-11-30T14:00:00Z`, `2026-11-30T15:00:00+01:00`), as unix milliseconds.

use anyhow::anyhow;
use chrono::{DateTime, NaiveDate};

/// Which end of a day a date-only value stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DayEnd {
    /// The first instant of the day: a `--since` bound.
    Start,
    /// The first instant of the next day: an exclusive `--until` bound that keeps the day.
    After,
}

/// Parses `text` as a date or an instant.
pub fn parse_date_ms(text: &str, end: DayEnd) -> anyhow::Result<i64> {
    let text = text.trim();
    if let Ok(instant) = DateTime::parse_from_rfc3339(text) {
        return Ok(instant.timestamp_millis());
    }
    let day = NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| {
        anyhow!("`{text}` is not a date: use YYYY-MM-DD or an RFC 3339 time such as 2026-11-30T14:00:00Z")
    })?;
    let day = match end {
        DayEnd::Start => day,
        DayEnd::After => day
            .succ_opt()
            .ok_or_else(|| anyhow!("`{text}` is past the last representable day"))?,
    };
    let midnight = day
        .and_hms_opt(0, 0, 0)
        .ok_or_else(|| anyhow!("`{text}` has no midnight"))?;
    Ok(midnight.and_utc().timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_day_spans_from_its_midnight_to_the_next() {
        let since = parse_date_ms("2026-11-30", DayEnd::Start).unwrap();
        let until = parse_date_ms("2026-11-30", DayEnd::After).unwrap();
        assert_eq!(until - since, 86_400_000);
        assert_eq!(since, 1_795_996_800_000);
    }

    #[test]
    fn instants_keep_their_offset() {
        assert_eq!(
            parse_date_ms("2026-11-30T01:00:00+01:00", DayEnd::Start).unwrap(),
            1_795_996_800_000
        );
    }

    #[test]
    fn nonsense_names_the_accepted_forms() {
        let err = parse_date_ms("yesterday", DayEnd::Start).unwrap_err();
        assert!(err.to_string().contains("YYYY-MM-DD"), "{err}");
    }
}
