//! The `promote_user_profile` task: user observations the historian saw
//! `dreamer.user_profile_promotion_sightings` times become lines of the user's profile.
//!
//! Deterministic and idempotent: the store adds a line per observation seen often enough in
//! all (sightings in every project counted together, since they describe one person) that
//! no line came from yet, so a second run adds nothing and a line the user removed never
//! comes back. A fold promotes the same way when it renders the profile; this task does it
//! on its schedule, so a line reaches `m[1]` at the next natural rebuild even in a session
//! that does not fold for days, and records each promotion in the run and the log. The
//! profile belongs to the user, not to a project, so the task holds one store-wide lease.

use crate::batches::TaskContext;
use crate::error::Result;
use crate::report::{Failure, TaskReport};

/// The lease `promote_user_profile` holds, whatever project it runs for.
pub const PROFILE_DOMAIN: &str = "user_profile";

/// Runs `promote_user_profile` (the context's project only names the run).
pub fn promote_user_profile(ctx: &TaskContext<'_>) -> Result<TaskReport> {
    let mut report = TaskReport::default();
    if !(ctx.keep_lease)()? {
        report.failure = Some(Failure::new(
            "lease_lost",
            "another dreamer took the lease before anything was promoted",
        ));
        return Ok(report);
    }
    let now_ms = (ctx.clock)();
    let sightings = ctx.settings.profile_sightings;
    let added = ctx
        .store
        .write(|tx| tx.promote_observations(u64::from(sightings), now_ms))?;
    for line in &added {
        tracing::info!(
            line = line.id,
            text = line.text,
            "dreamer: a user observation joined the profile"
        );
    }
    report.changes = u32::try_from(added.len()).unwrap_or(u32::MAX);
    let texts: Vec<String> = added
        .iter()
        .map(|line| format!("#{} \"{}\"", line.id, line.text))
        .collect();
    report.detail = if texts.is_empty() {
        format!("no observation newly seen {sightings} times")
    } else {
        format!(
            "{} observations seen {sightings} times joined the profile: {}",
            texts.len(),
            texts.join(", ")
        )
    };
    Ok(report)
}
