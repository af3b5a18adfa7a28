//! The async shell: send, time out, retry, fall back. The shapes live in `anthropic`,
//! `openai` and `responses`; this file only moves bytes and decides whether to try again.

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use crate::endpoint::{EndpointLabel, ModelEndpoint, Wire};
use crate::error::{LlmError, Result};
use crate::provider_error;
use crate::retry::{RetryPolicy, clock_seed};
use crate::structured::{StructuredAnswer, StructuredRequest, ToolSpec};
use crate::{anthropic, openai, responses};

/// Asks models for structured answers on behalf of background agents (the historian first):
/// a forced tool call on Anthropic and Chat, a strict JSON-schema text format on Responses.
///
/// Cheap to clone: the HTTP client is shared, so one instance can serve every session.
#[derive(Debug, Clone)]
pub struct LlmClient {
    http: reqwest::Client,
    policy: RetryPolicy,
}

/// One failed attempt and how long the provider asked us to wait before the next.
struct Failure {
    error: LlmError,
    retry_after: Option<std::time::Duration>,
}

impl From<LlmError> for Failure {
    fn from(error: LlmError) -> Self {
        Self {
            error,
            retry_after: None,
        }
    }
}

/// Everything an attempt needs, prepared once per endpoint so retries send identical bytes.
struct Prepared<'a> {
    endpoint: &'a ModelEndpoint,
    label: EndpointLabel,
    url: reqwest::Url,
    headers: HeaderMap,
    body: Vec<u8>,
    tool: &'a ToolSpec<'a>,
}

impl LlmClient {
    /// A client with its own connection pool.
    pub fn new(policy: RetryPolicy) -> Result<Self> {
        let http = reqwest::Client::builder()
            .build()
            .map_err(|source| LlmError::ClientSetup { source })?;
        Ok(Self::with_http(http, policy))
    }

    /// A client over an existing `reqwest::Client` (e.g. the proxy's, to share its pool).
    /// Timeouts are set per attempt from `policy`, whatever the shared client's own are.
    pub fn with_http(http: reqwest::Client, policy: RetryPolicy) -> Self {
        Self { http, policy }
    }

    /// The attempt budget this client applies to each endpoint.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// Asks one endpoint, retrying transient failures (429, 5xx, 529, transport) with backoff
    /// up to `max_attempts`; other failures return at once.
    pub async fn call_structured(
        &self,
        endpoint: &ModelEndpoint,
        request: &StructuredRequest,
    ) -> Result<StructuredAnswer> {
        let tool = ToolSpec::from_value(&request.tool)?;
        let prepared = prepare(endpoint, request, &tool)?;
        let max_attempts = self.policy.max_attempts.max(1);
        let mut attempt = 1;
        loop {
            tracing::debug!(endpoint = %prepared.label, attempt, "background model call");
            let failure = match self.attempt(&prepared).await {
                Ok(answer) => return Ok(answer),
                Err(failure) => failure,
            };
            if attempt >= max_attempts || !failure.error.is_retryable() {
                return Err(failure.error);
            }
            let delay =
                self.policy
                    .delay(attempt, failure.retry_after, clock_seed(u64::from(attempt)));
            tracing::warn!(
                endpoint = %prepared.label,
                attempt,
                max_attempts,
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                error = %failure.error,
                "background model call failed; retrying"
            );
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    /// Asks each endpoint in order, moving on when one has failed for good (its retries spent,
    /// or a failure retrying cannot fix: a rejected key, an unknown model, no tool call).
    ///
    /// When all fail, [`LlmError::AllFailed`] holds each endpoint's last error in order.
    pub async fn call_with_fallbacks(
        &self,
        endpoints: &[ModelEndpoint],
        request: &StructuredRequest,
    ) -> Result<StructuredAnswer> {
        if endpoints.is_empty() {
            return Err(LlmError::NoEndpoints);
        }
        // A bad tool fails the same way everywhere; say so once.
        ToolSpec::from_value(&request.tool)?;
        let mut failures = Vec::with_capacity(endpoints.len());
        for (index, endpoint) in endpoints.iter().enumerate() {
            match self.call_structured(endpoint, request).await {
                Ok(answer) => return Ok(answer),
                Err(error) => {
                    if let Some(next) = endpoints.get(index + 1) {
                        tracing::warn!(
                            endpoint = %endpoint.label(),
                            next = %next.label(),
                            error = %error,
                            "background model failed; trying the next fallback"
                        );
                    }
                    failures.push(error);
                }
            }
        }
        Err(LlmError::AllFailed { failures })
    }

    async fn attempt(&self, prepared: &Prepared<'_>) -> Result<StructuredAnswer, Failure> {
        let timeout = self.policy.attempt_timeout;
        let transport = |error: reqwest::Error| -> LlmError {
            if error.is_timeout() {
                LlmError::Timeout {
                    endpoint: prepared.label.clone(),
                    timeout,
                }
            } else {
                LlmError::Connection {
                    endpoint: prepared.label.clone(),
                    source: error.without_url(),
                }
            }
        };
        let response = self
            .http
            .post(prepared.url.clone())
            .headers(prepared.headers.clone())
            .timeout(timeout)
            .body(prepared.body.clone())
            .send()
            .await
            .map_err(transport)?;
        let status = response.status();
        let retry_after = provider_error::retry_after(response.headers());
        let bytes = response.bytes().await.map_err(transport)?;
        if !status.is_success() {
            let key = prepared.endpoint.api_key.as_ref().map(|k| k.expose());
            let (error_type, message) = provider_error::describe_error_body(&bytes, key);
            return Err(Failure {
                error: LlmError::Provider {
                    endpoint: prepared.label.clone(),
                    status: status.as_u16(),
                    error_type,
                    message,
                },
                retry_after,
            });
        }
        let answer = match prepared.endpoint.wire {
            Wire::Anthropic => anthropic::read_answer(&bytes, prepared.tool.name, &prepared.label),
            Wire::OpenAiChat => openai::read_answer(&bytes, prepared.tool.name, &prepared.label),
            Wire::OpenAiResponses => responses::read_answer(&bytes, prepared.tool, &prepared.label),
        }?;
        tracing::debug!(
            endpoint = %prepared.label,
            input_tokens = answer.usage.input_tokens,
            output_tokens = answer.usage.output_tokens,
            "background model answered"
        );
        Ok(answer)
    }
}

fn prepare<'a>(
    endpoint: &'a ModelEndpoint,
    request: &'a StructuredRequest,
    tool: &'a ToolSpec<'a>,
) -> Result<Prepared<'a>> {
    let label = endpoint.label();
    let url = reqwest::Url::parse(&endpoint.url())
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https"))
        .ok_or_else(|| LlmError::InvalidBaseUrl {
            model: endpoint.model.clone(),
        })?;
    let body = match endpoint.wire {
        Wire::Anthropic => serde_json::to_vec(&anthropic::body(&endpoint.model, request, tool)),
        Wire::OpenAiChat => serde_json::to_vec(&openai::body(&endpoint.model, request, tool)),
        Wire::OpenAiResponses => {
            serde_json::to_vec(&responses::body(&endpoint.model, request, tool))
        }
    }
    .map_err(|_| LlmError::InvalidTool {
        reason: "it could not be serialised as JSON",
    })?;
    let headers = headers(endpoint, &label)?;
    Ok(Prepared {
        endpoint,
        label,
        url,
        headers,
        body,
        tool,
    })
}

/// The call's headers. The key goes here and nowhere else, marked sensitive so no layer of
/// the HTTP stack prints it. Extra headers come last and so may override the defaults.
fn headers(endpoint: &ModelEndpoint, label: &EndpointLabel) -> Result<HeaderMap> {
    let invalid = |name: &str| LlmError::InvalidHeader {
        endpoint: label.clone(),
        name: name.to_owned(),
    };
    let sensitive = |name: &str, value: &str| -> Result<HeaderValue> {
        let mut value = HeaderValue::from_str(value).map_err(|_| invalid(name))?;
        value.set_sensitive(true);
        Ok(value)
    };
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    match endpoint.wire {
        Wire::Anthropic => {
            headers.insert(
                "anthropic-version",
                HeaderValue::from_static(anthropic::VERSION),
            );
            if let Some(key) = &endpoint.api_key {
                headers.insert("x-api-key", sensitive("x-api-key", key.expose())?);
            }
        }
        Wire::OpenAiChat | Wire::OpenAiResponses => {
            if let Some(key) = &endpoint.api_key {
                let bearer = format!("Bearer {}", key.expose());
                headers.insert(AUTHORIZATION, sensitive("authorization", &bearer)?);
            }
        }
    }
    for (name, value) in &endpoint.extra_headers {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid(name))?;
        headers.insert(header, sensitive(name, value.expose())?);
    }
    Ok(headers)
}
