//! ISO 8601 timestamps as Claude Code writes them (`2025-06-02T10:15:30.123Z`).
//!
//! A few lines of calendar arithmetic instead of a date crate: the loader only needs the
//! instant in milliseconds to space the steps of a replay, and the workspace pins no date
//! library.

/// Milliseconds since the Unix epoch of an RFC 3339 / ISO 8601 date-time.
///
/// Accepts `YYYY-MM-DDTHH:MM:SS`, an optional fraction of any length (cut to milliseconds),
/// and a `Z`, `±HH:MM` or `±HHMM` offset; a missing offset means UTC. `None` for anything
/// else, so the caller can name the line it came from.
pub(super) fn parse_iso8601_ms(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let year = number(bytes.get(0..4)?)?;
    let month = number(bytes.get(5..7)?)?;
    let day = number(bytes.get(8..10)?)?;
    let hour = number(bytes.get(11..13)?)?;
    let minute = number(bytes.get(14..16)?)?;
    let second = number(bytes.get(17..19)?)?;
    let separators = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if separators
        .iter()
        .any(|&(at, sep)| bytes.get(at) != Some(&sep))
        || !matches!(bytes.get(10), Some(b'T' | b't' | b' '))
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = bytes.get(19..)?;
    let mut millis = 0;
    if let Some((b'.', fraction)) = rest.split_first() {
        let digits = fraction.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        for (place, digit) in fraction.iter().take(3).take(digits).enumerate() {
            millis += i64::from(digit - b'0') * [100, 10, 1][place];
        }
        rest = fraction.get(digits..)?;
    }
    let offset_minutes = offset(rest)?;
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds * 1_000 + millis)
}

fn number(digits: &[u8]) -> Option<i64> {
    digits.iter().try_fold(0, |acc, &b| {
        b.is_ascii_digit().then(|| acc * 10 + i64::from(b - b'0'))
    })
}

/// The offset in minutes east of UTC.
fn offset(rest: &[u8]) -> Option<i64> {
    match rest {
        [] | [b'Z' | b'z'] => Some(0),
        [sign @ (b'+' | b'-'), tail @ ..] => {
            let (hours, minutes) = match tail {
                [h1, h2, b':', m1, m2] | [h1, h2, m1, m2] => {
                    (number(&[*h1, *h2])?, number(&[*m1, *m2])?)
                }
                _ => return None,
            };
            let total = hours * 60 + minutes;
            Some(if *sign == b'-' { -total } else { total })
        }
        _ => None,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12; // March = 0
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::parse_iso8601_ms;

    #[test]
    fn parses_claude_code_timestamps() {
        assert_eq!(parse_iso8601_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_iso8601_ms("2025-06-02T10:15:30.123Z"),
            Some(1_748_859_330_123)
        );
        // Fractions are cut to milliseconds; offsets move the instant.
        assert_eq!(
            parse_iso8601_ms("2025-06-02T12:15:30.123456+02:00"),
            Some(1_748_859_330_123)
        );
        assert_eq!(
            parse_iso8601_ms("2025-06-02T05:15:30.1-0500"),
            Some(1_748_859_330_100)
        );
        assert_eq!(
            parse_iso8601_ms("2024-02-29T00:00:00"),
            Some(1_709_164_800_000)
        );
    }

    #[test]
    fn rejects_what_is_not_a_timestamp() {
        for bad in [
            "",
            "yesterday",
            "2025-06-02",
            "2025-13-02T10:15:30Z",
            "2025-06-02T10:15:30.Z",
            "2025-06-02T10:15:30+2",
            "2025/06/02T10:15:30Z",
        ] {
            assert_eq!(parse_iso8601_ms(bad), None, "{bad}");
        }
    }
}
