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

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use mc_embed::{EmbedError, Embedder, EmbeddingSettings, HUB_URL, fetch_model};
use mc_engine::Engine;
use mc_engine::search::{embed_pending, embedding_settings};

use crate::app::App;

/// Batches embedded between looks at whether requests are being planned.
const BATCHES_PER_ROUND: usize = 1;

/// How long the task waits while a request is being planned before it looks again.
const YIELD_TO_PASSES: std::time::Duration = std::time::Duration::from_millis(20);

/// The embedding model (once there is one) and whether a task is using it.
pub struct EmbeddingRuntime {
    embedder: Arc<OnceLock<Embedder>>,
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
        let runtime = Self {
            embedder: Arc::new(OnceLock::new()),
            running: Arc::new(AtomicBool::new(false)),
        };
        match Embedder::from_settings(&settings) {
            Ok(Some(embedder)) => {
                tracing::info!(model = embedder.model_id(), "semantic search is on");
                let _ = runtime.embedder.set(embedder);
                Some(runtime)
            }
            Ok(None) => None,
            Err(EmbedError::MissingModelFile { dir, file }) if mc_embed::LOCAL_MODEL_BUILT => {
                tracing::info!(
                    dir = %dir.display(),
                    file,
                    "the local embedding model is missing: fetching it in the background; search uses full text until then"
                );
                runtime.fetch(settings, dir);
                Some(runtime)
            }
            Err(error) => {
                tracing::info!(%error, "no embedding model: search uses full text alone");
                None
            }
        }
    }
}

impl EmbeddingRuntime {
    /// Downloads the model files into `dir`, then loads the model (on a blocking thread);
    /// a failure is said once and leaves search on full text.
    fn fetch(&self, settings: EmbeddingSettings, dir: std::path::PathBuf) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let slot = Arc::clone(&self.embedder);
        handle.spawn(async move {
            if let Err(error) = fetch_model(&dir, HUB_URL).await {
                tracing::warn!(%error, "cannot fetch the embedding model; search uses full text alone");
                return;
            }
            let loaded = tokio::task::spawn_blocking(move || Embedder::from_settings(&settings)).await;
            match loaded {
                Ok(Ok(Some(embedder))) => {
                    tracing::info!(model = embedder.model_id(), "semantic search is on");
                    let _ = slot.set(embedder);
                }
                Ok(Ok(None)) => {}
                Ok(Err(error)) => tracing::warn!(%error, "the fetched embedding model does not load"),
                Err(error) => tracing::warn!(%error, "loading the embedding model failed"),
            }
        });
    }
}

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
