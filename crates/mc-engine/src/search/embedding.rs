//! Embedding in the background, and the semantic signal it makes possible.
//!
//! [`embed_pending`] gives the embedding model what has no vector yet, a batch at a time,
//! with each batch's store work on a blocking thread: it never runs inside a request's
//! transaction, so ingest is never slowed by it. [`EmbeddedSearch`] embeds a query and
//! compares it with the stored vectors through a [`VectorIndex`] kept in memory.

use std::sync::{Arc, Mutex, PoisonError};

use std::path::Path;

use mc_core::config::{EmbeddingProviderChoice, EmbeddingsConfig};
use mc_embed::{Embedder, EmbeddingProvider, EmbeddingSettings, OpenAiSettings, to_blob};
use mc_store::{SearchScope, Store};

use super::query_vectors::QueryVectors;
use super::vector_index::VectorIndex;
use super::{Found, SearchError, SemanticSearch};

/// Items given to the model per call: the local model's batch, and a sensible request size
/// for an HTTP endpoint.
pub const EMBED_BATCH: usize = 32;

/// Where the local model lives when the configuration does not say: inside the data
/// directory, so it moves with the store.
pub const DEFAULT_MODEL_DIR: &str = "models/all-MiniLM-L6-v2";

/// The provider settings `config` asks for (`None` when embeddings are off); a relative or
/// absent model directory is taken inside `data_dir`.
pub fn embedding_settings(config: &EmbeddingsConfig, data_dir: &Path) -> Option<EmbeddingSettings> {
    if !config.enabled {
        return None;
    }
    let provider = match config.provider {
        EmbeddingProviderChoice::Local => EmbeddingProvider::Local {
            model_dir: data_dir.join(config.model_dir.as_deref().unwrap_or(DEFAULT_MODEL_DIR)),
        },
        EmbeddingProviderChoice::OpenAiCompatible => {
            let mut settings = OpenAiSettings::new(
                config.endpoint.clone().unwrap_or_default(),
                config.model.clone().unwrap_or_default(),
            );
            settings.api_key_env = config.api_key_env.clone();
            EmbeddingProvider::OpenAiCompatible(settings)
        }
    };
    Some(EmbeddingSettings { provider })
}

/// Why background embedding stopped.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddingError {
    /// The model failed; the items stay pending and are tried again on the next run.
    #[error("embedding failed: {0}")]
    Model(#[from] mc_embed::EmbedError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] mc_store::StoreError),
    /// The blocking task running store work did not finish.
    #[error("the store task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// The model answered with a different number of vectors than texts.
    #[error("the embedding model returned {got} vectors for {sent} texts")]
    Count {
        /// Texts sent.
        sent: usize,
        /// Vectors returned.
        got: usize,
    },
}

/// Something that holds the store: the store itself, or an engine over it.
pub trait HoldsStore: Send + Sync + 'static {
    /// The store.
    fn store(&self) -> &Store;
}

impl HoldsStore for Store {
    fn store(&self) -> &Store {
        self
    }
}

impl HoldsStore for crate::Engine {
    fn store(&self) -> &Store {
        crate::Engine::store(self)
    }
}

/// Embeds everything without a current vector of `embedder`'s model, at most `max_batches`
/// batches; returns how many items were embedded.
pub async fn embed_pending<S: HoldsStore>(
    store: Arc<S>,
    embedder: &Embedder,
    max_batches: usize,
) -> Result<usize, EmbeddingError> {
    let model = embedder.model_id().to_owned();
    let mut embedded = 0;
    for _ in 0..max_batches {
        let batch = {
            let (store, model) = (Arc::clone(&store), model.clone());
            tokio::task::spawn_blocking(move || {
                store
                    .store()
                    .write(|tx| tx.items_to_embed(&model, EMBED_BATCH))
            })
            .await??
        };
        if batch.items.is_empty() && batch.messages_through.is_none() {
            break;
        }
        let texts: Vec<String> = batch.items.iter().map(|item| item.text.clone()).collect();
        let vectors = embedder.embed(&texts).await?;
        if vectors.len() != texts.len() {
            return Err(EmbeddingError::Count {
                sent: texts.len(),
                got: vectors.len(),
            });
        }
        embedded += vectors.len();
        let rows: Vec<_> = batch
            .items
            .into_iter()
            .zip(vectors.iter().map(|vector| to_blob(vector)))
            .collect();
        let through = batch.messages_through;
        let (store, model) = (Arc::clone(&store), model.clone());
        tokio::task::spawn_blocking(move || {
            store
                .store()
                .write(|tx| tx.store_vectors(&model, &rows, through))
        })
        .await??;
    }
    Ok(embedded)
}

/// The semantic signal: the query embedded by the model, compared with its stored vectors.
///
/// [`SemanticSearch::nearest`] blocks on the model; call [`super::search`] from a blocking
/// thread (`spawn_blocking`) or outside any async runtime, never from an async task.
pub struct EmbeddedSearch {
    embedder: Embedder,
    store: Arc<Store>,
    index: Mutex<VectorIndex>,
    /// Recent queries' vectors: a repeated search does not run the model again.
    queries: Mutex<QueryVectors>,
    runtime: tokio::runtime::Handle,
}

impl EmbeddedSearch {
    /// A semantic signal over `store` with `embedder`, running the model on `runtime`.
    pub fn new(embedder: Embedder, store: Arc<Store>, runtime: tokio::runtime::Handle) -> Self {
        let index = Mutex::new(VectorIndex::new(embedder.model_id()));
        Self {
            embedder,
            store,
            index,
            queries: Mutex::default(),
            runtime,
        }
    }
}

impl SemanticSearch for EmbeddedSearch {
    fn nearest(
        &self,
        query: &str,
        scope: &SearchScope,
        limit: usize,
    ) -> Result<Found, SearchError> {
        let known = self
            .queries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(query);
        let vector = match known {
            Some(vector) => vector,
            None => {
                let vectors = self
                    .runtime
                    .block_on(self.embedder.embed(&[query.to_owned()]))
                    .map_err(|err| SearchError::Semantic(err.to_string()))?;
                let Some(vector) = vectors.into_iter().next() else {
                    return Ok(Found::default());
                };
                let vector: Arc<[f32]> = Arc::from(vector);
                self.queries
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .put(query, Arc::clone(&vector));
                vector
            }
        };
        let mut index = self.index.lock().unwrap_or_else(PoisonError::into_inner);
        index.refresh(&self.store)?;
        Ok(index.nearest(&vector, scope, limit))
    }
}
