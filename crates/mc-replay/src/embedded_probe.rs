//! The semantic signal of `bench recall-dropped`'s hybrid figures, from an embedding model
//! run in-process over the store the replay's `magic` writes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mc_embed::{EmbedError, Embedder, EmbeddingProvider, EmbeddingSettings};
use mc_engine::search::{EmbeddedSearch, SemanticSearch, embed_pending};
use mc_store::Store;

use crate::recall_dropped::SemanticProbe;

/// Why the probe's model could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProbeModelError {
    /// The model files would not load.
    #[error("cannot load the embedding model from {dir}: {source}")]
    Load {
        /// The model directory given.
        dir: PathBuf,
        /// What failed.
        #[source]
        source: EmbedError,
    },
    /// The settings named no model.
    #[error("no embedding model in {0}")]
    NoModel(PathBuf),
    /// The runtime the model's embedding runs on would not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

/// A local model's semantic signal over the store of the recording being replayed: the
/// store is opened beside the engine's own handle, and everything stored since the last
/// query is embedded before the next.
pub struct EmbeddedProbe {
    runtime: tokio::runtime::Runtime,
    embedder: Embedder,
    over: Option<(PathBuf, Arc<Store>, EmbeddedSearch)>,
}

impl EmbeddedProbe {
    /// The probe over the local model in `model_dir` (`model.safetensors`, `tokenizer.json`).
    pub fn local(model_dir: &Path) -> Result<Self, ProbeModelError> {
        let settings = EmbeddingSettings {
            provider: EmbeddingProvider::Local {
                model_dir: model_dir.to_path_buf(),
            },
        };
        let embedder = Embedder::from_settings(&settings)
            .map_err(|source| ProbeModelError::Load {
                dir: model_dir.to_path_buf(),
                source,
            })?
            .ok_or_else(|| ProbeModelError::NoModel(model_dir.to_path_buf()))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(ProbeModelError::Runtime)?;
        Ok(Self {
            runtime,
            embedder,
            over: None,
        })
    }
}

impl SemanticProbe for EmbeddedProbe {
    fn signal(&mut self, path: &Path) -> Option<&dyn SemanticSearch> {
        if self.over.as_ref().is_none_or(|(open, ..)| open != path) {
            self.over = None;
            let store = Arc::new(Store::open(path).ok()?);
            let search = EmbeddedSearch::new(
                self.embedder.clone(),
                Arc::clone(&store),
                self.runtime.handle().clone(),
            );
            self.over = Some((path.to_path_buf(), store, search));
        }
        let (_, store, search) = self.over.as_ref()?;
        self.runtime
            .block_on(embed_pending(Arc::clone(store), &self.embedder, usize::MAX))
            .ok()?;
        Some(search)
    }
}
