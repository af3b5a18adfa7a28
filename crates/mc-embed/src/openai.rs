//! The OpenAI-compatible provider: `POST /v1/embeddings` with `{"model", "input": [..]}`.
//!
//! OpenAI, Ollama, llama.cpp, LM Studio and vLLM all speak this shape. The key is read from
//! its environment variable for each request and goes only into the `Authorization` header
//! (marked sensitive), so it is never held in a struct that could be printed.

use std::time::Duration;

use mc_core::Secret;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde::{Deserialize, Serialize};

use crate::error::{EmbedError, Result};
use crate::provider_error::describe;
use crate::settings::OpenAiSettings;
use crate::vector::l2_normalise;

/// Most inputs sent in one request. OpenAI accepts 2048, but local servers embed a request
/// in one batch and some cap it lower; small requests also keep one timeout meaningful.
const MAX_INPUTS_PER_REQUEST: usize = 64;

/// The most of an error body read, in bytes: enough for any JSON error, bounded for HTML.
const MAX_ERROR_BODY_BYTES: usize = 16 * 1024;

/// Ceiling on connection setup, below the whole-request timeout, so an unreachable host
/// fails fast even when the request timeout is long.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An OpenAI-compatible embeddings endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiEmbedder {
    client: reqwest::Client,
    url: String,
    model: String,
    model_id: String,
    api_key_env: Option<String>,
    dimensions: Option<usize>,
    timeout: Duration,
}

#[derive(Serialize)]
struct EmbeddingsRequest<'a> {
    model: &'a str,
    input: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    dimensions: Option<usize>,
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    embedding: Vec<f32>,
    /// Position of the input this vector belongs to; a few servers leave it out and answer
    /// in input order, which is what a missing index is taken to mean.
    index: Option<usize>,
}

impl OpenAiEmbedder {
    /// Checks the settings and builds the client; sends nothing.
    ///
    /// Fails when the endpoint is not an http(s) URL or the key variable is named but unset,
    /// so a misconfiguration shows at startup rather than on the first search.
    pub fn new(settings: &OpenAiSettings) -> Result<Self> {
        let url = embeddings_url(&settings.endpoint)?;
        if let Some(var) = &settings.api_key_env {
            read_key(var)?;
        }
        let client = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(CONNECT_TIMEOUT.min(settings.timeout))
            .build()
            .map_err(|source| EmbedError::HttpClient { source })?;
        let model_id = match settings.dimensions {
            Some(d) => format!("openai:{}@{d}", settings.model),
            None => format!("openai:{}", settings.model),
        };
        Ok(Self {
            client,
            url,
            model: settings.model.clone(),
            model_id,
            api_key_env: settings.api_key_env.clone(),
            dimensions: settings.dimensions,
            timeout: settings.timeout,
        })
    }

    /// `openai:{model}`, with `@{dimensions}` when shortened vectors were asked for.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The configured dimensions, if any; otherwise whatever the model returns.
    pub fn dimensions(&self) -> Option<usize> {
        self.dimensions
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// One unit vector per text, in order, in requests of at most 64 inputs.
    ///
    /// Texts go out as given: OpenAI itself rejects an empty string (400), so callers should
    /// not ask for vectors of empty texts.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut vectors = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(MAX_INPUTS_PER_REQUEST) {
            vectors.extend(self.embed_request(chunk).await?);
        }
        Ok(vectors)
    }

    async fn embed_request(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let key = self.api_key_env.as_deref().map(read_key).transpose()?;
        let body = EmbeddingsRequest {
            model: &self.model,
            input: texts,
            dimensions: self.dimensions,
        };
        let mut request = self.client.post(&self.url).json(&body);
        if let Some(key) = &key {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                    EmbedError::InvalidApiKey {
                        var: self.api_key_env.clone().unwrap_or_default(),
                    }
                })?;
            value.set_sensitive(true);
            request = request.header(AUTHORIZATION, value);
        }
        let response = request.send().await.map_err(|e| self.transport_error(e))?;
        let status = response.status();
        if !status.is_success() {
            let body = read_bounded(response, MAX_ERROR_BODY_BYTES).await;
            return Err(EmbedError::Status {
                url: self.url.clone(),
                status: status.as_u16(),
                message: describe(&body, key.as_ref().map(Secret::expose)),
            });
        }
        let bytes = response
            .bytes()
            .await
            .map_err(|e| self.transport_error(e))?;
        let parsed: EmbeddingsResponse =
            serde_json::from_slice(&bytes).map_err(|e| self.malformed(format!("{e}")))?;
        self.order_and_check(parsed, texts.len())
    }

    /// Puts vectors in input order and checks there is exactly one usable vector per input.
    fn order_and_check(
        &self,
        parsed: EmbeddingsResponse,
        expected: usize,
    ) -> Result<Vec<Vec<f32>>> {
        if parsed.data.len() != expected {
            return Err(self.malformed(format!(
                "{} vectors for {expected} inputs",
                parsed.data.len()
            )));
        }
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
        let mut width = self.dimensions;
        for (position, item) in parsed.data.into_iter().enumerate() {
            let index = item.index.unwrap_or(position);
            let Some(slot) = slots.get_mut(index) else {
                return Err(self.malformed(format!("index {index} out of range 0..{expected}")));
            };
            if slot.is_some() {
                return Err(self.malformed(format!("index {index} appears twice")));
            }
            let mut vector = item.embedding;
            let expected_width = *width.get_or_insert(vector.len());
            if vector.is_empty() || vector.len() != expected_width {
                return Err(self.malformed(format!(
                    "vector {index} has {} dimensions, expected {expected_width}",
                    vector.len()
                )));
            }
            if vector.iter().any(|x| !x.is_finite()) {
                return Err(self.malformed(format!("vector {index} holds a non-finite value")));
            }
            l2_normalise(&mut vector);
            *slot = Some(vector);
        }
        Ok(slots.into_iter().flatten().collect())
    }

    fn transport_error(&self, source: reqwest::Error) -> EmbedError {
        if source.is_timeout() {
            EmbedError::Timeout {
                url: self.url.clone(),
                after_ms: u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
            }
        } else {
            EmbedError::Request {
                url: self.url.clone(),
                source,
            }
        }
    }

    fn malformed(&self, reason: String) -> EmbedError {
        EmbedError::MalformedResponse {
            url: self.url.clone(),
            reason,
        }
    }
}

/// The URL to post to: a URL ending in `/embeddings` as given, else `{base}/v1/embeddings`
/// without doubling a `/v1` the base already ends with.
fn embeddings_url(endpoint: &str) -> Result<String> {
    let invalid = |reason| EmbedError::InvalidEndpoint {
        endpoint: endpoint.to_owned(),
        reason,
    };
    let parsed = reqwest::Url::parse(endpoint.trim()).map_err(|_| invalid("not a URL"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(invalid("the scheme must be http or https"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(invalid("a query or fragment is not supported"));
    }
    // Errors quote the URL, so it must hold no secret: keys go in `api_key_env`.
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(invalid(
            "credentials in the URL are not supported; use api_key_env",
        ));
    }
    let base = parsed.as_str().trim_end_matches('/');
    Ok(if base.ends_with("/embeddings") {
        base.to_owned()
    } else if base.ends_with("/v1") {
        format!("{base}/embeddings")
    } else {
        format!("{base}/v1/embeddings")
    })
}

/// The key from its variable; an empty value counts as unset, since sending `Bearer ` only
/// turns a clear configuration error into a confusing 401.
fn read_key(var: &str) -> Result<Secret> {
    match std::env::var(var) {
        Ok(value) if !value.trim().is_empty() => Ok(Secret::new(value.trim())),
        Ok(_) | Err(_) => Err(EmbedError::MissingApiKey {
            var: var.to_owned(),
        }),
    }
}

/// Up to `limit` bytes of the body; a read error mid-body keeps what arrived, since the
/// status is what matters and the text only helps explain it.
async fn read_bounded(mut response: reqwest::Response, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    body.truncate(limit);
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_appends_the_path_once() {
        let url = |e: &str| embeddings_url(e).unwrap();
        assert_eq!(
            url("https://api.openai.com"),
            "https://api.openai.com/v1/embeddings"
        );
        assert_eq!(
            url("https://api.openai.com/"),
            "https://api.openai.com/v1/embeddings"
        );
        assert_eq!(
            url("http://127.0.0.1:11434/v1"),
            "http://127.0.0.1:11434/v1/embeddings"
        );
        assert_eq!(
            url("http://gw.local/openai/v1/embeddings/"),
            "http://gw.local/openai/v1/embeddings"
        );
        assert_eq!(
            url("http://gw.local/prefix"),
            "http://gw.local/prefix/v1/embeddings"
        );
    }

    #[test]
    fn url_rejects_what_is_not_http() {
        for bad in [
            "",
            "api.openai.com",
            "ftp://x/v1",
            "http://x/v1?k=1",
            "http://user:sk-secret@x/v1",
        ] {
            assert!(
                matches!(embeddings_url(bad), Err(EmbedError::InvalidEndpoint { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn model_id_names_the_dimensions_when_asked_for() {
        let mut settings = OpenAiSettings::new("http://127.0.0.1:1", "text-embedding-3-small");
        assert_eq!(
            OpenAiEmbedder::new(&settings).unwrap().model_id(),
            "openai:text-embedding-3-small"
        );
        settings.dimensions = Some(384);
        assert_eq!(
            OpenAiEmbedder::new(&settings).unwrap().model_id(),
            "openai:text-embedding-3-small@384"
        );
    }

    #[test]
    fn an_unset_key_variable_fails_at_construction() {
        let mut settings = OpenAiSettings::new("http://127.0.0.1:1", "m");
        settings.api_key_env = Some("MC_EMBED_TEST_SURELY_UNSET_KEY".to_owned());
        assert!(matches!(
            OpenAiEmbedder::new(&settings),
            Err(EmbedError::MissingApiKey { var }) if var == "MC_EMBED_TEST_SURELY_UNSET_KEY"
        ));
    }
}
