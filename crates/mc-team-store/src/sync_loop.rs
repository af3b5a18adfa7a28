//! The background half of the failure rule: a loop inside `serve` that keeps the local cache
//! and the team store in step, off the request path.
//!
//! Each round migrates the team schema until that has succeeded once, replays the queued
//! writes, then pulls every project the local store knows. A round that meets an unreachable
//! server simply ends; the next one tries again. Nothing here can fail a request: requests
//! read the cache and queue their writes whatever this loop is doing.

use std::time::Duration;

use crate::sync::TeamSync;

/// How often a round runs: a colleague's memory reaches this proxy's cache within about this
/// long (it shows on the session's next natural rebuild after that).
pub const SYNC_EVERY: Duration = Duration::from_secs(1);

/// Runs rounds every `every` until the runtime stops; `now_ms` reads the clock.
pub async fn keep_in_step(sync: TeamSync, every: Duration, now_ms: impl Fn() -> i64) {
    let mut migrated = false;
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        if !migrated {
            match sync.team().migrate().await {
                Ok(_) => migrated = true,
                Err(error) => {
                    sync.note_failure(now_ms(), &error);
                    continue;
                }
            }
        }
        round(&sync, &now_ms).await;
    }
}

/// One round: replay, then pull each known project; stops at the first unreachable answer.
/// The projects are listed before the replay, so a project known only by a queued change
/// is pulled in the round that sends it.
pub async fn round(sync: &TeamSync, now_ms: &impl Fn() -> i64) {
    let projects = match sync.projects().await {
        Ok(projects) => projects,
        Err(error) => {
            tracing::warn!(%error, "could not list the projects to sync with the team store");
            return;
        }
    };
    match sync.replay(now_ms()).await {
        Ok(replayed) => {
            for (write, reason) in &replayed.refused {
                tracing::warn!(
                    write_id = %write.write_id,
                    project = %write.project,
                    %reason,
                    "the team store refused a queued memory change; it was dropped"
                );
            }
            if replayed.left > 0 {
                return;
            }
        }
        Err(error) => {
            tracing::warn!(%error, "could not replay the team store's queued writes");
            return;
        }
    }
    for project in projects {
        if let Err(error) = sync.pull(&project, now_ms()).await {
            tracing::debug!(%error, %project, "team store sync stopped for this round");
            return;
        }
    }
}
