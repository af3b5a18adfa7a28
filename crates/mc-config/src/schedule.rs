//! Checking a dreamer task's cron expression while the config loads.
//!
//! `mc-core` keeps schedules as text so it needs no cron parser; checking here means a typo
//! is reported with its file and key at startup, not hours later when the task fails to run.

use croner::parser::{CronParser, Seconds, Year};
use mc_core::config::TaskSchedule;

/// Why `text` is neither `"off"` nor a 5-field cron expression, or `None` when it is fine.
pub fn schedule_problem(text: &str) -> Option<String> {
    let TaskSchedule::Cron(expr) = TaskSchedule::from_config(text) else {
        return None;
    };
    let fields = expr.split_whitespace().count();
    if fields != 5 && !expr.starts_with('@') {
        return Some(format!(
            "`{expr}` has {fields} fields; write 5 (minute hour day-of-month month day-of-week) \
             or \"off\""
        ));
    }
    let parser = CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build();
    parser
        .parse(&expr)
        .err()
        .map(|err| format!("`{expr}` is not a valid cron expression: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_cron_and_off() {
        assert_eq!(schedule_problem("0 3 * * *"), None);
        assert_eq!(schedule_problem("*/30 9-17 * * mon-fri"), None);
        assert_eq!(schedule_problem("@daily"), None);
        assert_eq!(schedule_problem("off"), None);
    }

    #[test]
    fn rejects_bad_expressions() {
        let six = schedule_problem("0 0 3 * * *").unwrap();
        assert!(six.contains("has 6 fields"), "{six}");
        let range = schedule_problem("75 3 * * *").unwrap();
        assert!(
            range.starts_with("`75 3 * * *` is not a valid cron expression"),
            "{range}"
        );
        assert!(schedule_problem("").is_some());
    }
}
