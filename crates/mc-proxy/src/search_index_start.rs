//! Indexing stored messages for full-text search, in the background of managed calls.
//!
//! A pass stores a request's new messages; tokenising them for the search index is left out
//! of its transaction (mc-store's `search_index` says why) and done here, after the call is
//! planned: one task at a time indexes what is pending, a batch per transaction, and between
//! batches waits while a request is being planned, so a pass never waits for the index. A
//! search catches up on its own before it reads, so nothing depends on this task's timing.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::app::App;

/// Messages indexed per transaction: a short hold of the write lock.
const BATCH: u32 = 256;

/// How long the task waits while a request is being planned before it looks again.
const YIELD_TO_PASSES: std::time::Duration = std::time::Duration::from_millis(5);

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
            while app.passes_running() {
                tokio::time::sleep(YIELD_TO_PASSES).await;
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
