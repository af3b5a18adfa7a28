//! Which provider computes vectors, as the configuration chose it.
//!
//! These are checked settings: the config crate parses the user's file and fills them in;
//! this crate only reads them.

use std::path::PathBuf;
use std::time::Duration;

/// How search gets its vectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingSettings {
    /// The provider.
    pub provider: EmbeddingProvider,
}

/// The three ways to embed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbeddingProvider {
    /// No vectors: search falls back to full-text (BM25) alone.
    Off,
    /// all-MiniLM-L6-v2 run in-process on the CPU (needs the `local` feature).
    Local {
        /// A directory holding `model.safetensors` and `tokenizer.json`, and optionally
        /// `config.json` (the standard all-MiniLM-L6-v2 values are used without it).
        model_dir: PathBuf,
    },
    /// An OpenAI-compatible `/embeddings` endpoint (OpenAI, Ollama, llama.cpp, LM Studio, vLLM).
    OpenAiCompatible(OpenAiSettings),
}

/// How to reach an OpenAI-compatible embeddings endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiSettings {
    /// A base URL (`https://api.openai.com`, `http://127.0.0.1:11434/v1`) to which
    /// `/v1/embeddings` is appended (`/v1` is not doubled), or a full URL that already ends
    /// with `/embeddings`, used as given.
    pub endpoint: String,
    /// The model name sent in each request, e.g. `text-embedding-3-small`.
    pub model: String,
    /// The NAME of the environment variable holding the API key, sent as a bearer token;
    /// `None` for local servers that need none. The key itself is never configured here,
    /// so it cannot end up in a config dump or a log.
    pub api_key_env: Option<String>,
    /// Dimensions to ask for (OpenAI's `dimensions` parameter, for models that can shorten
    /// their vectors). `None` sends nothing and takes what the model returns.
    pub dimensions: Option<usize>,
    /// Limit for one whole request, connection to last byte.
    pub timeout: Duration,
}

impl OpenAiSettings {
    /// Default limit for one request: generous for a batch on a slow local server, short
    /// enough that a hung server does not stall indexing for long.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

    /// Settings with no key, no dimensions override and the default timeout.
    pub fn new(endpoint: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            model: model.into(),
            api_key_env: None,
            dimensions: None,
            timeout: Self::DEFAULT_TIMEOUT,
        }
    }
}
