//! Indexing stored messages for full-text search, in the background of managed calls.
//!
//! A pass stores a request's new messages; tokenising them for the search index is left out
//! of its transaction (mc-store's `search_index` says why) and done here, after the call is
//! planned: one task at a time indexes what is pending, a few messages per transaction, each
//! batch once the proxy has been quiet for a moment (or has waited long enough under steady
//! load, and never while a request is being planned), so a pass rarely waits for the index. A
//! search catches up on its own before it reads, so nothing depends on this task's timing.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::app::App;

/// Messages indexed per transaction: a pass that arrives meanwhile waits for the write lock
/// until the batch commits, so a batch is a few messages (a tool output can be tens of
/// kilobytes to tokenise). With 256, the proxy_latency bench's 200K case, whose sessions start
/// with hundreds of stored messages, had passes waiting 10-15 ms.
const BATCH: u32 = 8;

/// How long the proxy must have started no pass before a batch runs: a client in a quick
/// tool loop sends its next request within milliseconds of an answer, and a batch running then
/// would compete with that request's pass for the write lock and the cores.
const QUIET_MS: i64 = 100;

/// The longest a batch waits for quiet (under steady load), so the index never falls far
/// behind; it still never runs while a request is being planned.
const MOST_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// How long the task waits before it looks again.
const LOOK_AGAIN: std::time::Duration = std::time::Duration::from_millis(10);

/// Starts indexing what is pending, unless a task already is.
pub fn start(app: &Arc<App>) {
    let Ok(engine) = app.engine() else {
        return;
    };
    if app.search_indexing.swap(true, Ordering::AcqRel) {
        return;
    }
    let engine = Arc::clone(engine);
    let app = Arc::clone(app);
    tokio::spawn(async move {
        loop {
            let waiting = std::time::Instant::now();
            while !app.quiet_for(QUIET_MS)
                && (app.passes_running() || waiting.elapsed() < MOST_WAIT)
            {
                tokio::time::sleep(LOOK_AGAIN).await;
            }
            let store = Arc::clone(&engine);
            let indexed =
                tokio::task::spawn_blocking(move || store.store().index_pending_batch(BATCH)).await;
            match indexed {
                Ok(Ok(0)) => break,
                Ok(Ok(_)) => tokio::task::yield_now().await,
                Ok(Err(error)) => {
                    tracing::warn!(%error, "indexing messages for search stopped; it resumes after the next call, and a search catches up first");
                    break;
                }
                Err(_) => break,
            }
        }
        app.search_indexing.store(false, Ordering::Release);
    });
}
