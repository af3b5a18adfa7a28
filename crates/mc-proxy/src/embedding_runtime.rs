//! The embedding model the proxy's background embedding uses ([`crate::embedding_start`]):
//! loaded when the store opens, or fetched from the public hub in the background when a
//! build with the local model finds its files missing.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

use mc_embed::{EmbedError, Embedder, EmbeddingSettings, HUB_URL, fetch_model};
use mc_engine::Engine;
use mc_engine::search::embedding_settings;

/// The embedding model (once there is one) and whether a task is using it.
pub struct EmbeddingRuntime {
    /// The model, set once it is loaded.
    pub embedder: Arc<OnceLock<Embedder>>,
    /// Whether an embedding task is running.
    pub running: Arc<AtomicBool>,
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
