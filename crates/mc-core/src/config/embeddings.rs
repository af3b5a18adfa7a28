//! Whether search uses embeddings, and their shape.

use serde::Serialize;

use super::units::Bounds;

/// Semantic search embeddings (DESIGN §5 "Search", §9).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EmbeddingsConfig {
    /// Whether search adds embedding similarity to full-text ranking; without it search
    /// uses FTS5 alone. Off by default: cross-validated on LoCoMo (`bench locomo
    /// --cross-validate`) the embedding added 0.003 to full text's held-out recall@10 (0.741
    /// against 0.738), within the spread between splits, for a model run per query and every
    /// message embedded in the background.
    pub enabled: bool,
    /// Vector size of the embedding model (all-MiniLM-L6-v2 class: 384). Stored vectors of
    /// another size are re-embedded rather than compared.
    pub dimensions: u32,
    /// Who computes the vectors.
    pub provider: EmbeddingProviderChoice,
    /// The local model's directory (`model.safetensors`, `tokenizer.json`, `config.json`);
    /// `None` uses `models/all-MiniLM-L6-v2` in the data directory.
    pub model_dir: Option<String>,
    /// An OpenAI-compatible server's base URL (Ollama, LM Studio, OpenAI), for
    /// `openai-compatible`.
    pub endpoint: Option<String>,
    /// The model name sent to `endpoint`.
    pub model: Option<String>,
    /// The environment variable holding `endpoint`'s API key (never the key itself).
    pub api_key_env: Option<String>,
}

/// Who computes embedding vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EmbeddingProviderChoice {
    /// all-MiniLM-L6-v2 in-process (builds with the `local-embeddings` feature); without the
    /// model or the feature, search runs on full text alone and says so once in the log.
    Local,
    /// Any `/v1/embeddings` endpoint.
    OpenAiCompatible,
}

impl EmbeddingProviderChoice {
    /// The name used in configuration files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::OpenAiCompatible => "openai-compatible",
        }
    }

    /// The choice a configuration name stands for.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Local, Self::OpenAiCompatible]
            .into_iter()
            .find(|choice| choice.as_str() == name)
    }
}

impl EmbeddingsConfig {
    /// Accepted [`Self::dimensions`].
    pub const DIMENSIONS: Bounds = Bounds::count(1, 8_192, "dimensions");
}

impl Default for EmbeddingsConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            dimensions: 384,
            provider: EmbeddingProviderChoice::Local,
            model_dir: None,
            endpoint: None,
            model: None,
            api_key_env: None,
        }
    }
}
