//! Everything that can go wrong while setting up a provider or embedding text.

use std::path::PathBuf;

/// An error from any library underneath (candle, tokenizers) that we only pass on.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The crate's result type.
pub type Result<T, E = EmbedError> = std::result::Result<T, E>;

/// Why a provider could not be built or could not embed.
///
/// Messages name the file, variable or URL involved and never a credential: provider error
/// bodies are redacted before they land here.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The local model directory lacks one of the files the model needs.
    #[error(
        "embedding model directory {dir} has no {file}; it must hold model.safetensors and \
         tokenizer.json of all-MiniLM-L6-v2 (config.json is optional)"
    )]
    MissingModelFile {
        /// The configured directory.
        dir: PathBuf,
        /// The file that is missing.
        file: &'static str,
    },
    /// A model file exists but could not be read.
    #[error("could not read embedding model file {path}")]
    ReadModelFile {
        /// The file.
        path: PathBuf,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },
    /// A downloaded model file could not be written into the cache directory.
    #[error("could not write embedding model file {path}")]
    WriteModelFile {
        /// The file or directory.
        path: PathBuf,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },
    /// `config.json` is not a BERT configuration.
    #[error("embedding model config {path} is not a valid BERT config.json")]
    ModelConfig {
        /// The file.
        path: PathBuf,
        /// The parse failure.
        #[source]
        source: serde_json::Error,
    },
    /// The directory holds a model whose vectors are not the 384 dimensions this crate expects.
    #[error(
        "embedding model in {dir} has hidden size {hidden_size}; the local provider runs \
         all-MiniLM-L6-v2 (384)"
    )]
    UnsupportedModel {
        /// The configured directory.
        dir: PathBuf,
        /// What its config says.
        hidden_size: usize,
    },
    /// Local embeddings were configured in a build that left them out.
    #[error(
        "local embeddings (model dir {model_dir}) need a build with mc-embed's `local` feature; \
         rebuild with it or choose another embedding provider"
    )]
    LocalFeatureOff {
        /// The configured directory.
        model_dir: PathBuf,
    },
    /// The weights or the tokenizer failed to load.
    #[error("could not load embedding model file {path}")]
    LoadModel {
        /// The file being loaded.
        path: PathBuf,
        /// The library's error.
        #[source]
        source: BoxError,
    },
    /// Tokenising or running the model failed.
    #[error("local embedding model failed while {doing}")]
    Inference {
        /// The step that failed.
        doing: &'static str,
        /// The library's error.
        #[source]
        source: BoxError,
    },
    /// The blocking task that ran the local model did not finish.
    #[error("local embedding task did not finish")]
    Task {
        /// Why (cancelled at shutdown, or a panic inside the model).
        #[source]
        source: tokio::task::JoinError,
    },
    /// The environment variable named as holding the API key is unset or empty.
    #[error("environment variable {var} (configured to hold the embeddings API key) is not set")]
    MissingApiKey {
        /// The variable's name.
        var: String,
    },
    /// The key variable holds characters an HTTP header cannot carry (a pasted newline).
    #[error("environment variable {var} holds an API key with characters not allowed in a header")]
    InvalidApiKey {
        /// The variable's name.
        var: String,
    },
    /// The configured endpoint is not an http(s) URL.
    #[error("embeddings endpoint {endpoint:?} is not usable: {reason}")]
    InvalidEndpoint {
        /// What was configured.
        endpoint: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The HTTP client could not be built (TLS setup).
    #[error("could not build the HTTP client for embeddings")]
    HttpClient {
        /// The client's error.
        #[source]
        source: reqwest::Error,
    },
    /// The request did not complete within the configured timeout.
    #[error("embeddings request to {url} timed out after {after_ms} ms")]
    Timeout {
        /// Where it went.
        url: String,
        /// The configured limit.
        after_ms: u64,
    },
    /// The request failed before an answer arrived (connection refused, reset, DNS).
    #[error("embeddings request to {url} failed")]
    Request {
        /// Where it went.
        url: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },
    /// The provider answered with a non-success status.
    #[error("embeddings provider at {url} answered {status}: {message}")]
    Status {
        /// Where it went.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// The provider's message, shortened and with anything resembling a key redacted.
        message: String,
    },
    /// The provider answered 2xx with a body that is not a usable embeddings response.
    #[error("embeddings response from {url} is malformed: {reason}")]
    MalformedResponse {
        /// Where it came from.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// A stored vector's byte length is not a multiple of four.
    #[error("stored embedding of {len} bytes is not a whole number of f32 values")]
    BlobLength {
        /// The blob's length in bytes.
        len: usize,
    },
}

impl EmbedError {
    /// Whether the same call may succeed later unchanged: timeouts, transport failures, rate
    /// limits and server errors. Configuration and model errors never heal by retrying.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Timeout { .. } | Self::Request { .. } => true,
            Self::Status { status, .. } => *status == 429 || *status >= 500,
            Self::MissingModelFile { .. }
            | Self::ReadModelFile { .. }
            | Self::WriteModelFile { .. }
            | Self::ModelConfig { .. }
            | Self::UnsupportedModel { .. }
            | Self::LocalFeatureOff { .. }
            | Self::LoadModel { .. }
            | Self::Inference { .. }
            | Self::Task { .. }
            | Self::MissingApiKey { .. }
            | Self::InvalidApiKey { .. }
            | Self::InvalidEndpoint { .. }
            | Self::HttpClient { .. }
            | Self::MalformedResponse { .. }
            | Self::BlobLength { .. } => false,
        }
    }
}
