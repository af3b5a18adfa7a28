//! Embedding stored rows for semantic search, in the background of managed calls.
//!
//! After a managed call is planned, the proxy starts one embedding task if none is running:
//! it embeds what has no vector yet (the messages just stored, new memories and
//! compartments), a few batches at a time, until nothing is left. It never holds a request:
//! the store work runs on blocking threads between batches and the model on its own thread.
//! Without a usable model (embeddings off, a build without the local model, an endpoint that
//! is misconfigured) search runs on full text alone, which is said once when the proxy
//! starts. A build with the local model whose files are missing fetches them from the
//! public hub in the background, once, and embeds from then on.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use mc_engine::search::embed_pending;

use crate::app::App;

/// Batches embedded between looks at whether requests are being planned.
const BATCHES_PER_ROUND: usize = 1;

/// How long the task waits while a request is being planned before it looks again.
const YIELD_TO_PASSES: std::time::Duration = std::time::Duration::from_millis(20);

/// Starts embedding what is new, unless a task already is. Between batches the task waits
/// while any request is being planned: the local model takes every core for a batch, and a
/// pass must not wait for it.
pub fn start(app: &Arc<App>) {
    let Ok(store) = app.store.get() else {
        return;
    };
    let (Some(runtime), engine) = (&store.embeddings, &store.engine) else {
        return;
    };
    let Some(embedder) = runtime.embedder.get() else {
        return;
    };
    if runtime.running.swap(true, Ordering::AcqRel) {
        return;
    }
    let engine = Arc::clone(engine);
    let embedder = embedder.clone();
    let running = Arc::clone(&runtime.running);
    let app = Arc::clone(app);
    tokio::spawn(async move {
        loop {
            while app.passes_running() {
                tokio::time::sleep(YIELD_TO_PASSES).await;
            }
            match embed_pending(Arc::clone(&engine), &embedder, BATCHES_PER_ROUND).await {
                Ok(0) => break,
                Ok(_) => tokio::task::yield_now().await,
                Err(error) => {
                    tracing::warn!(%error, "embedding stopped; it resumes after the next call");
                    break;
                }
            }
        }
        running.store(false, Ordering::Release);
    });
}
