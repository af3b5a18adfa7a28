//! The provider chosen by configuration, behind one type that callers hold.

#[cfg(feature = "local")]
use std::sync::Arc;

use crate::error::{EmbedError, Result};
#[cfg(feature = "local")]
use crate::local::LocalEmbedder;
use crate::model_dir::ModelFiles;
use crate::openai::OpenAiEmbedder;
use crate::settings::{EmbeddingProvider, EmbeddingSettings};

/// A configured source of vectors. Cheap to clone; clones share the loaded model.
///
/// There is no "off" variant: [`Embedder::from_settings`] returns `None` for it, so a caller
/// cannot ask a disabled provider for vectors and must take the full-text path instead.
#[derive(Debug, Clone)]
pub enum Embedder {
    /// all-MiniLM-L6-v2 in-process.
    #[cfg(feature = "local")]
    Local(Arc<LocalEmbedder>),
    /// An OpenAI-compatible HTTP endpoint.
    OpenAi(OpenAiEmbedder),
}

impl Embedder {
    /// Builds the configured provider, or `None` when embeddings are off.
    ///
    /// A local model is loaded here (~90 MB read, well under a second in release builds), so
    /// call this at startup or on a blocking thread. Errors name what to fix: the missing
    /// model file, the unset key variable, the unusable endpoint, or a build without the
    /// `local` feature.
    pub fn from_settings(settings: &EmbeddingSettings) -> Result<Option<Self>> {
        match &settings.provider {
            EmbeddingProvider::Off => Ok(None),
            EmbeddingProvider::Local { model_dir } => {
                // Checked first so the message names the missing file in every build.
                ModelFiles::locate(model_dir)?;
                local(model_dir).map(Some)
            }
            EmbeddingProvider::OpenAiCompatible(openai) => {
                OpenAiEmbedder::new(openai).map(|e| Some(Self::OpenAi(e)))
            }
        }
    }

    /// The identity stored beside each vector (`local:all-MiniLM-L6-v2`,
    /// `openai:text-embedding-3-small`); when it changes, stored vectors are stale and must be
    /// re-embedded, since vectors of different models do not compare.
    pub fn model_id(&self) -> &str {
        match self {
            #[cfg(feature = "local")]
            Self::Local(_) => LocalEmbedder::MODEL_ID,
            Self::OpenAi(openai) => openai.model_id(),
        }
    }

    /// The vectors' width when known before the first call: always for the local model, for
    /// an endpoint only when dimensions were configured.
    pub fn dimensions(&self) -> Option<usize> {
        match self {
            #[cfg(feature = "local")]
            Self::Local(_) => Some(crate::local::DIMENSIONS),
            Self::OpenAi(openai) => openai.dimensions(),
        }
    }

    /// One unit-length vector per text, in input order; an empty slice costs nothing.
    ///
    /// The local model runs under `tokio::task::spawn_blocking` (it is CPU-bound for
    /// milliseconds per text), so this is safe to await on a runtime thread.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        match self {
            #[cfg(feature = "local")]
            Self::Local(model) => {
                let model = Arc::clone(model);
                let texts = texts.to_vec();
                tokio::task::spawn_blocking(move || model.embed_blocking(&texts))
                    .await
                    .map_err(|source| EmbedError::Task { source })?
            }
            Self::OpenAi(openai) => openai.embed(texts).await,
        }
    }
}

#[cfg(feature = "local")]
fn local(model_dir: &std::path::Path) -> Result<Embedder> {
    LocalEmbedder::load(model_dir).map(|m| Embedder::Local(Arc::new(m)))
}

#[cfg(not(feature = "local"))]
fn local(model_dir: &std::path::Path) -> Result<Embedder> {
    Err(EmbedError::LocalFeatureOff {
        model_dir: model_dir.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::OpenAiSettings;

    #[test]
    fn off_builds_nothing() {
        let settings = EmbeddingSettings {
            provider: EmbeddingProvider::Off,
        };
        assert!(Embedder::from_settings(&settings).unwrap().is_none());
    }

    #[test]
    fn an_incomplete_model_dir_names_the_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("model.safetensors"), b"").unwrap();
        let settings = EmbeddingSettings {
            provider: EmbeddingProvider::Local {
                model_dir: dir.path().to_path_buf(),
            },
        };
        let error = Embedder::from_settings(&settings).unwrap_err();
        assert!(
            error.to_string().contains("has no tokenizer.json"),
            "{error}"
        );
    }

    #[cfg(not(feature = "local"))]
    #[test]
    fn a_complete_model_dir_without_the_feature_says_to_rebuild() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("model.safetensors"), b"").unwrap();
        std::fs::write(dir.path().join("tokenizer.json"), b"{}").unwrap();
        let settings = EmbeddingSettings {
            provider: EmbeddingProvider::Local {
                model_dir: dir.path().to_path_buf(),
            },
        };
        assert!(matches!(
            Embedder::from_settings(&settings),
            Err(EmbedError::LocalFeatureOff { .. })
        ));
    }

    #[tokio::test]
    async fn empty_input_sends_nothing() {
        // Port 1 refuses connections: had a request gone out, this would fail.
        let settings = EmbeddingSettings {
            provider: EmbeddingProvider::OpenAiCompatible(OpenAiSettings::new(
                "http://127.0.0.1:1",
                "m",
            )),
        };
        let embedder = Embedder::from_settings(&settings).unwrap().unwrap();
        assert_eq!(embedder.embed(&[]).await.unwrap(), Vec::<Vec<f32>>::new());
        assert_eq!(embedder.model_id(), "openai:m");
        assert_eq!(embedder.dimensions(), None);
    }
}
