//! The provider wires the proxy manages, and errors shaped the way each client expects.
//!
//! An agent shows a provider error to its user and sometimes acts on its type (retrying an
//! `overloaded_error`, stopping on an `invalid_request_error`), so the proxy's own errors use
//! the provider's body shape and status codes, and say what to do in their message.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// A provider wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Chat Completions.
    OpenAi,
    /// OpenAI Responses (`/v1/responses`, what Codex speaks).
    OpenAiResponses,
}

impl Provider {
    /// The name the ledger records.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAi => "openai",
            Self::OpenAiResponses => "openai_responses",
        }
    }
}

/// What went wrong, in the provider's categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request is malformed or cannot be served as sent (400).
    InvalidRequest,
    /// No such route (404).
    NotFound,
    /// The body is over the configured limit (413).
    TooLarge,
    /// The body's content encoding is not one the proxy decodes (415).
    UnsupportedEncoding,
    /// A model call whose body is not declared `application/json` (415): what a web page
    /// can send without asking the browser first.
    NotJson,
    /// The request is not for this proxy, or comes from a web page (403).
    Forbidden,
    /// The client did not send its whole request in time (408).
    ClientTimeout,
    /// The client asked to switch protocols (a WebSocket), which the proxy does not relay
    /// (426): clients that try a WebSocket first read this as "use HTTP" and fall back at
    /// once, where other statuses make them retry.
    UpgradeRequired,
    /// The proxy cannot manage the request right now: store unavailable or busy (503).
    Unavailable,
    /// The upstream did not answer or broke the connection (502, or 504 on a timeout).
    Upstream {
        /// Whether the upstream timed out rather than failing.
        timed_out: bool,
    },
}

impl ErrorKind {
    fn status(self) -> StatusCode {
        match self {
            Self::InvalidRequest => StatusCode::BAD_REQUEST,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedEncoding | Self::NotJson => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::ClientTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::UpgradeRequired => StatusCode::UPGRADE_REQUIRED,
            Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::Upstream { timed_out: true } => StatusCode::GATEWAY_TIMEOUT,
            Self::Upstream { timed_out: false } => StatusCode::BAD_GATEWAY,
        }
    }

    fn anthropic_type(self) -> &'static str {
        match self {
            Self::InvalidRequest
            | Self::UnsupportedEncoding
            | Self::NotJson
            | Self::ClientTimeout
            | Self::UpgradeRequired => "invalid_request_error",
            Self::Forbidden => "permission_error",
            Self::NotFound => "not_found_error",
            Self::TooLarge => "request_too_large",
            Self::Unavailable => "overloaded_error",
            Self::Upstream { .. } => "api_error",
        }
    }

    fn openai_type(self) -> &'static str {
        match self {
            Self::InvalidRequest
            | Self::UnsupportedEncoding
            | Self::TooLarge
            | Self::NotJson
            | Self::ClientTimeout
            | Self::UpgradeRequired => "invalid_request_error",
            Self::Forbidden => "permission_error",
            Self::NotFound => "not_found_error",
            Self::Unavailable | Self::Upstream { .. } => "server_error",
        }
    }
}

/// An error the proxy answers itself, rendered for one provider's clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyError {
    /// The wire to shape the body for.
    pub provider: Provider,
    /// Its category.
    pub kind: ErrorKind,
    /// What happened and what to do about it.
    pub message: String,
}

impl ProxyError {
    /// An error of `kind` for `provider`'s clients; the message is prefixed with the
    /// product's name so a user can tell the proxy's errors from the provider's.
    pub fn new(provider: Provider, kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            provider,
            kind,
            message: format!("magic-context: {}", message.into()),
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.kind.status()
    }

    /// The body as the provider would send it.
    pub fn body(&self) -> serde_json::Value {
        match self.provider {
            Provider::Anthropic => json!({
                "type": "error",
                "error": {"type": self.kind.anthropic_type(), "message": self.message},
            }),
            Provider::OpenAi | Provider::OpenAiResponses => json!({
                "error": {
                    "message": self.message,
                    "type": self.kind.openai_type(),
                    "param": null,
                    "code": null,
                },
            }),
        }
    }

    /// The body as one SSE event, for a failure after a stream has started: Anthropic
    /// streams end with an `error` event; Chat clients read a `data:` line with an error;
    /// Responses clients an `error` event with the error's fields at its top level.
    pub fn sse_event(&self) -> String {
        match self.provider {
            Provider::Anthropic => {
                mc_wire::sse::encode_event(Some("error"), &self.body().to_string())
            }
            Provider::OpenAi => mc_wire::sse::encode_event(None, &self.body().to_string()),
            Provider::OpenAiResponses => {
                let data = json!({
                    "type": "error",
                    "code": self.kind.openai_type(),
                    "message": self.message,
                    "param": null,
                });
                mc_wire::sse::encode_event(Some("error"), &data.to_string())
            }
        }
    }
}

impl IntoResponse for ProxyError {
    fn into_response(self) -> Response {
        let mut response = (self.status(), self.body().to_string()).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_shape() {
        let error = ProxyError::new(Provider::Anthropic, ErrorKind::TooLarge, "too big");
        assert_eq!(error.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            error.body(),
            json!({"type": "error", "error": {"type": "request_too_large", "message": "magic-context: too big"}})
        );
    }

    #[test]
    fn openai_shape() {
        let error = ProxyError::new(Provider::OpenAi, ErrorKind::Unavailable, "store busy");
        assert_eq!(error.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(error.body()["error"]["type"], "server_error");
        assert_eq!(
            error.body()["error"]["message"],
            "magic-context: store busy"
        );
    }

    #[test]
    fn responses_shapes() {
        let error = ProxyError::new(Provider::OpenAiResponses, ErrorKind::InvalidRequest, "bad");
        assert_eq!(error.status(), StatusCode::BAD_REQUEST);
        assert_eq!(error.body()["error"]["type"], "invalid_request_error");
        assert!(
            error
                .sse_event()
                .starts_with("event: error\ndata: {\"type\":\"error\"")
        );
    }

    #[test]
    fn stream_error_event() {
        let error = ProxyError::new(
            Provider::Anthropic,
            ErrorKind::Upstream { timed_out: false },
            "upstream reset",
        );
        assert!(error.sse_event().starts_with("event: error\ndata: {"));
    }
}
