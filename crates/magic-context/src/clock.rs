//! The wall clock, for commands that stamp or age what they touch: the binary, not the
//! libraries' pure core, is where time is read.

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> anyhow::Result<i64> {
    let elapsed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .context("the system clock is before 1970")?;
    Ok(i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
}
