//! UTC dates for compartment headings, computed from stored milliseconds.
//!
//! `mc-core` reads no clock and takes no date crate, so the civil calendar conversion is done
//! here (Howard Hinnant's `civil_from_days`, exact over the proleptic Gregorian calendar).

/// `YYYY-MM-DD HH:MM` in UTC for a Unix time in milliseconds.
pub fn format_utc_minute(unix_ms: u64) -> String {
    let minutes = unix_ms / 60_000;
    let days = minutes / (24 * 60);
    let minute_of_day = minutes % (24 * 60);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        minute_of_day / 60,
        minute_of_day % 60
    )
}

/// Year, month (1–12) and day (1–31) of the day `days` after 1970-01-01.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Shift the epoch to 0000-03-01 so leap days fall at the end of a 400-year era.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153; // 0 = March
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(format_utc_minute(0), "1970-01-01 00:00");
        // 2000-02-29 12:34 UTC, a leap day in a century leap year.
        assert_eq!(format_utc_minute(951_827_640_000), "2000-02-29 12:34");
        // 2026-11-29 11:44 UTC.
        assert_eq!(format_utc_minute(1_795_952_640_000), "2026-11-29 11:44");
        // 2100-03-01 00:00, the day after a skipped century leap day.
        assert_eq!(format_utc_minute(4_107_542_400_000), "2100-03-01 00:00");
    }

    #[test]
    fn consecutive_days_are_consecutive() {
        let mut previous = civil_from_days(0);
        for days in 1..200_000 {
            let next = civil_from_days(days);
            let advanced =
                (next.0 == previous.0 && next.1 == previous.1 && next.2 == previous.2 + 1)
                    || (next.0 == previous.0 && next.1 == previous.1 + 1 && next.2 == 1)
                    || (next.0 == previous.0 + 1 && next.1 == 1 && next.2 == 1 && previous.1 == 12);
            assert!(advanced, "{previous:?} -> {next:?}");
            previous = next;
        }
    }
}
