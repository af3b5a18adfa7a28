//! Everything that can go wrong asking a model for one structured answer.

use std::time::Duration;

use crate::endpoint::EndpointLabel;

/// The result of this crate's calls.
pub type Result<T, E = LlmError> = std::result::Result<T, E>;

/// Why a structured call failed.
///
/// Every variant that concerns a call names the endpoint by model and host only: never the key,
/// never the full URL (a base URL may carry a query). Provider messages that echo the key back
/// are redacted before they land here.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The endpoint's base URL does not parse, so no request was sent.
    #[error("model `{model}`: base URL is not a valid http(s) URL; fix the endpoint's base_url")]
    InvalidBaseUrl {
        /// The model configured on that endpoint.
        model: String,
    },
    /// A header (the key or an extra header) cannot be sent as an HTTP header.
    #[error(
        "{endpoint}: header `{name}` has characters HTTP does not allow; check the endpoint's key and extra headers"
    )]
    InvalidHeader {
        /// Which endpoint.
        endpoint: EndpointLabel,
        /// The header's name (its value is never shown: it may be a credential).
        name: String,
    },
    /// The request's tool is not `{name, description, input_schema}`.
    #[error(
        "the forced tool must be an object with a string `name` and an object `input_schema`: {reason}"
    )]
    InvalidTool {
        /// What is missing or mistyped.
        reason: &'static str,
    },
    /// The HTTP client could not be built (TLS backend initialisation).
    #[error("could not build the HTTP client for background model calls")]
    ClientSetup {
        /// What reqwest reported.
        #[source]
        source: reqwest::Error,
    },
    /// No answer arrived within the per-attempt timeout.
    #[error("{endpoint}: no complete answer within {} ms; raise the attempt timeout or choose a faster model", .timeout.as_millis())]
    Timeout {
        /// Which endpoint.
        endpoint: EndpointLabel,
        /// The per-attempt timeout that ran out.
        timeout: Duration,
    },
    /// The request could not be sent or its answer not read (refused, reset, DNS, TLS).
    #[error(
        "{endpoint}: could not reach the provider; check that the base URL is right and the server is up"
    )]
    Connection {
        /// Which endpoint.
        endpoint: EndpointLabel,
        /// The transport error, with its URL stripped.
        #[source]
        source: reqwest::Error,
    },
    /// The provider answered with a non-success status.
    #[error("{endpoint}: provider answered HTTP {status}{}: {message}", .error_type.as_deref().map(|t| format!(" ({t})")).unwrap_or_default())]
    Provider {
        /// Which endpoint.
        endpoint: EndpointLabel,
        /// The HTTP status (429, 529, 400, ...).
        status: u16,
        /// The provider's error type when the body names one (`overloaded_error`,
        /// `invalid_request_error`, ...).
        error_type: Option<String>,
        /// The provider's message, or the start of the body when it is not the usual JSON.
        message: String,
    },
    /// A success status whose body is not the provider's answer shape.
    #[error("{endpoint}: the answer is not a valid {wire} response; is the endpoint's wire right?")]
    MalformedAnswer {
        /// Which endpoint.
        endpoint: EndpointLabel,
        /// The wire the answer was read as.
        wire: &'static str,
        /// Why it did not parse.
        #[source]
        source: serde_json::Error,
    },
    /// The answer holds no call to the forced tool.
    #[error("{endpoint}: the answer has no call to tool `{tool}` (stop reason: {}); the model may not support forced tool calls, or max_tokens is too small", .stop_reason.as_deref().unwrap_or("none given"))]
    NoToolCall {
        /// Which endpoint.
        endpoint: EndpointLabel,
        /// The tool that was forced.
        tool: String,
        /// Why the model stopped, as the provider put it (`max_tokens`, `length`, `end_turn`).
        stop_reason: Option<String>,
    },
    /// The tool call's arguments are not JSON (an OpenAI-style string that does not parse).
    #[error(
        "{endpoint}: the arguments of the call to tool `{tool}` are not JSON; the model may have been cut off (raise max_tokens) or may not support tool calls"
    )]
    ArgumentsNotJson {
        /// Which endpoint.
        endpoint: EndpointLabel,
        /// The tool that was called.
        tool: String,
        /// Why they did not parse.
        #[source]
        source: serde_json::Error,
    },
    /// A Responses answer holds no output text for the requested structured format.
    #[error("{endpoint}: the answer has no output for format `{format}` ({}); the model may not support structured outputs, or max_tokens is too small", .reason.as_deref().unwrap_or("no reason given"))]
    NoStructuredOutput {
        /// Which endpoint.
        endpoint: EndpointLabel,
        /// The format (the tool's name) that was requested.
        format: String,
        /// Why, as the provider put it: its refusal, the reason it stopped
        /// (`max_output_tokens`), or the response's status.
        reason: Option<String>,
    },
    /// A Responses answer's output text is not JSON.
    #[error(
        "{endpoint}: the output for format `{format}` is not JSON; the model may have been cut off (raise max_tokens) or may not support structured outputs"
    )]
    OutputNotJson {
        /// Which endpoint.
        endpoint: EndpointLabel,
        /// The format (the tool's name) that was requested.
        format: String,
        /// Why it did not parse.
        #[source]
        source: serde_json::Error,
    },
    /// `call_with_fallbacks` was given no endpoint.
    #[error("no model endpoint configured for this background call")]
    NoEndpoints,
    /// Every endpoint of a fallback chain failed; one error per endpoint, in order.
    #[error("all {} model endpoints failed: {}", .failures.len(), list(.failures))]
    AllFailed {
        /// The last error of each endpoint, in the order they were tried.
        failures: Vec<LlmError>,
    },
}

impl LlmError {
    /// Whether another attempt at the same endpoint may succeed.
    ///
    /// Rate limits (429), server errors (5xx, including Anthropic's 529 "overloaded") and
    /// transport failures are transient. A timeout is not retried here: the next attempt would
    /// most likely hang as long again, so the fallback chain moves on instead. Other 4xx and
    /// malformed answers would fail the same way twice.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Provider { status, .. } => *status == 429 || (500..=599).contains(status),
            Self::Connection { .. } => true,
            Self::InvalidBaseUrl { .. }
            | Self::InvalidHeader { .. }
            | Self::InvalidTool { .. }
            | Self::ClientSetup { .. }
            | Self::Timeout { .. }
            | Self::MalformedAnswer { .. }
            | Self::NoToolCall { .. }
            | Self::ArgumentsNotJson { .. }
            | Self::NoStructuredOutput { .. }
            | Self::OutputNotJson { .. }
            | Self::NoEndpoints
            | Self::AllFailed { .. } => false,
        }
    }
}

fn list(failures: &[LlmError]) -> String {
    failures
        .iter()
        .enumerate()
        .map(|(i, e)| format!("[{}] {e}", i + 1))
        .collect::<Vec<_>>()
        .join("; ")
}
