//! How the pages write figures: tokens with thousands separators, shares as percents,
//! dollars to the cent (or finer below a cent), times as ages.

/// `12,345`.
pub fn tokens(count: u64) -> String {
    mc_core::thousands(count)
}

/// `42.0%`, or `–` when unknown.
pub fn share(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_owned(), |value| format!("{:.1}%", value * 100.0))
}

/// `$1.23`, `$0.0042`.
pub fn usd(value: f64) -> String {
    if value != 0.0 && value.abs() < 0.01 {
        format!("${value:.4}")
    } else {
        format!("${value:.2}")
    }
}

/// How long before `now_ms` the stamp `at_ms` was: `12s ago`, `5m ago`, `3h ago`, `2d ago`.
pub fn age(now_ms: i64, at_ms: i64) -> String {
    let seconds = (now_ms - at_ms).max(0) / 1000;
    match seconds {
        0..60 => format!("{seconds}s ago"),
        60..3_600 => format!("{}m ago", seconds / 60),
        3_600..86_400 => format!("{}h ago", seconds / 3_600),
        _ => format!("{}d ago", seconds / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_as_a_person_writes_them() {
        assert_eq!(tokens(1_234_567), "1,234,567");
        assert_eq!(share(Some(0.4567)), "45.7%");
        assert_eq!(share(None), "–");
        assert_eq!(usd(1.234), "$1.23");
        assert_eq!(usd(0.00421), "$0.0042");
        assert_eq!(usd(0.0), "$0.00");
        assert_eq!(age(100_000, 95_000), "5s ago");
        assert_eq!(age(10_000_000, 0), "2h ago");
        assert_eq!(age(0, 5_000), "0s ago");
    }
}
