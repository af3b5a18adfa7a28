//! Embedding stored rows for semantic search, in the background of managed calls.
//!
//! After a managed call is planned, the proxy starts one embedding task if none is running:
//! it embeds what has no vector yet (the messages just stored, new memories and
//! compartments), a few batches at a time, until nothing is left. It never holds a request:
//! the store work runs on blocking threads between batches and the model on its own thread.
//! Without a usable model (embeddings off, no model files, a build without the local model)
//! search runs on full text alone, which is said once when the proxy starts.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mc_embed::Embedder;
use mc_engine::Engine;
use mc_engine::search::{embed_pending, embedding_settings};

use crate::app::App;

/// Batches embedded between checks of whether more is waiting.
const BATCHES_PER_ROUND: usize = 4;

/// The embedding model and whether a task is using it.
pub struct EmbeddingRuntime {
    embedder: Embedder,
    running: Arc<AtomicBool>,
}

impl EmbeddingRuntime {
    /// The configured model over `engine`'s store (a local model directory is taken inside
    /// the store's data directory), or `None`, said once, when there is none to use.
    pub fn new(engine: &Engine) -> Option<Self> {
        let data_dir = engine.store().path().parent()?;
        let Some(settings) = embedding_settings(&engine.config().embeddings, data_dir) else {
            tracing::info!("embeddings are off: search uses full text alone");
            return None;
        };
        match Embedder::from_settings(&settings) {
            Ok(Some(embedder)) => {
                tracing::info!(model = embedder.model_id(), "semantic search is on");
                Some(Self {
                    embedder,
                    running: Arc::new(AtomicBool::new(false)),
                })
            }
            Ok(None) => None,
            Err(error) => {
                tracing::info!(%error, "no embedding model: search uses full text alone");
                None
            }
        }
    }
}

/// Starts embedding what is new, unless a task already is.
pub fn start(app: &App) {
    let (Some(runtime), Ok(engine)) = (&app.embeddings, &app.engine) else {
        return;
    };
    if runtime.running.swap(true, Ordering::AcqRel) {
        return;
    }
    let engine = Arc::clone(engine);
    let embedder = runtime.embedder.clone();
    let running = Arc::clone(&runtime.running);
    tokio::spawn(async move {
        loop {
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
