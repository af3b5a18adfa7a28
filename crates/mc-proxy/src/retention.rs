//! The daily prune inside `serve`: sessions last active longer ago than
//! `retention.session_days` are removed, as `magic-context prune` removes them.
//!
//! It runs off the request path: a task that sleeps, then hands the work to a blocking
//! thread, where each session goes in its own short write transaction (a pass waits at most
//! for one of them). The first run comes a while after the proxy starts, so a proxy started
//! with an agent (`run`) serves its first calls before any pruning; later runs come a day
//! apart. While the store is not open the run is skipped until the next one.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::app::App;
use crate::clock::now_ms;

/// How long after the proxy starts the first prune runs.
const FIRST_RUN_AFTER: Duration = Duration::from_secs(10 * 60);

/// How long between prunes.
const RUN_EVERY: Duration = Duration::from_secs(24 * 60 * 60);

/// Starts the daily prune; abort the handle to stop it.
pub fn start(app: &Arc<App>) -> JoinHandle<()> {
    let app = Arc::clone(app);
    tokio::spawn(async move {
        tokio::time::sleep(FIRST_RUN_AFTER).await;
        loop {
            prune_once(&app).await;
            tokio::time::sleep(RUN_EVERY).await;
        }
    })
}

/// One prune, logged: what went at info, a failure at warn (the next run tries again).
async fn prune_once(app: &Arc<App>) {
    let Ok(engine) = app.store.engine().map(Arc::clone) else {
        return;
    };
    let days = engine.config().retention.session_days;
    let pruned = tokio::task::spawn_blocking(move || engine.prune_expired(now_ms())).await;
    let run = match pruned {
        Ok(Ok(run)) => run,
        Ok(Err(error)) => {
            tracing::warn!(%error, "retention: the daily prune failed; it runs again tomorrow");
            return;
        }
        Err(error) => {
            tracing::warn!(%error, "retention: the daily prune stopped; it runs again tomorrow");
            return;
        }
    };
    // What the proxy kept of a pruned session in memory must not outlive it.
    for pruned in &run.sessions {
        app.encoded_messages.take(&pruned.session);
        app.recent_usage.take(&pruned.session);
    }
    if run.sessions.is_empty() {
        tracing::debug!(days, "retention: no session to prune");
        return;
    }
    let rows: u64 = run
        .sessions
        .iter()
        .map(|session| session.total_rows())
        .sum();
    let returned_bytes = run.reclaimed.as_ref().map_or(0, |reclaimed| {
        reclaimed.pages_returned.saturating_mul(reclaimed.page_size)
    });
    tracing::info!(
        sessions = run.sessions.len(),
        rows,
        freed_bytes = run.freed_bytes(),
        returned_bytes,
        days,
        "retention: pruned the sessions last active more than retention.session_days ago"
    );
}
