//! Where a background call goes: the wire, the server, the model and its credential.

use std::fmt;

use mc_core::Secret;

/// The request format an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// Anthropic Messages: `POST {base}/v1/messages`, `x-api-key`.
    Anthropic,
    /// OpenAI Chat Completions: `POST {base}/v1/chat/completions`, `Authorization: Bearer`.
    /// Also what local servers (Ollama, llama.cpp, LM Studio) speak, usually without a key.
    OpenAiChat,
    /// OpenAI Responses: `POST {base}/v1/responses`, `Authorization: Bearer`. The answer is
    /// enforced as JSON by `text.format` (a strict JSON schema) rather than a forced tool
    /// call: what a backend serving only this API (as Codex users have) accepts.
    OpenAiResponses,
}

impl Wire {
    /// The wire's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Anthropic => "Anthropic Messages",
            Self::OpenAiChat => "OpenAI Chat Completions",
            Self::OpenAiResponses => "OpenAI Responses",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Self::Anthropic => "/messages",
            Self::OpenAiChat => "/chat/completions",
            Self::OpenAiResponses => "/responses",
        }
    }
}

/// One model to ask, and how to reach it.
///
/// `Debug` shows neither the key (a [`Secret`]) nor the extra headers' values (they may carry
/// credentials too), so an endpoint can sit in any logged struct.
#[derive(Clone)]
pub struct ModelEndpoint {
    /// The request format.
    pub wire: Wire,
    /// Scheme, host and optional path prefix, e.g. `https://api.anthropic.com` or
    /// `http://127.0.0.1:11434/v1` (a trailing `/v1` is not doubled).
    pub base_url: String,
    /// The model name sent in the body.
    pub model: String,
    /// The credential; `None` for local servers that need none.
    pub api_key: Option<Secret>,
    /// Headers sent as given (`anthropic-beta`, a gateway's own auth, a client's OAuth
    /// `authorization`), all marked sensitive. Their values are [`Secret`]s because any of
    /// them may be a credential and the endpoint cannot tell which.
    pub extra_headers: Vec<(String, Secret)>,
}

impl ModelEndpoint {
    /// An endpoint with no extra headers.
    pub fn new(
        wire: Wire,
        base_url: impl Into<String>,
        model: impl Into<String>,
        api_key: Option<Secret>,
    ) -> Self {
        Self {
            wire,
            base_url: base_url.into(),
            model: model.into(),
            api_key,
            extra_headers: Vec::new(),
        }
    }

    /// The full URL of the call: `{base}/v1/messages`, `{base}/v1/chat/completions` or
    /// `{base}/v1/responses`.
    ///
    /// OpenAI-compatible base URLs are often written with `/v1` already (`.../v1`), so that
    /// suffix is not added twice.
    pub(crate) fn url(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        let version = if base.ends_with("/v1") { "" } else { "/v1" };
        format!("{base}{version}{}", self.wire.path())
    }

    /// How messages name this endpoint: model and host, nothing that could hold a secret.
    pub fn label(&self) -> EndpointLabel {
        let host = reqwest::Url::parse(&self.base_url)
            .ok()
            .and_then(|url| {
                let host = url.host_str()?.to_owned();
                Some(match url.port() {
                    Some(port) => format!("{host}:{port}"),
                    None => host,
                })
            })
            .unwrap_or_else(|| "<invalid base URL>".to_owned());
        EndpointLabel {
            model: self.model.clone(),
            host,
        }
    }
}

impl fmt::Debug for ModelEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.extra_headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("ModelEndpoint")
            .field("wire", &self.wire)
            .field("base_url", &self.label().host)
            .field("model", &self.model)
            .field("api_key", &self.api_key)
            .field("extra_headers", &header_names)
            .finish()
    }
}

/// An endpoint as errors and logs name it: "model `m` at host".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointLabel {
    /// The model name.
    pub model: String,
    /// Host and explicit port of the base URL.
    pub host: String,
}

impl fmt::Display for EndpointLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "model `{}` at {}", self.model, self.host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_adds_v1_once() {
        let mut endpoint = ModelEndpoint::new(Wire::OpenAiChat, "http://h:1/v1/", "m", None);
        assert_eq!(endpoint.url(), "http://h:1/v1/chat/completions");
        endpoint.base_url = "https://api.anthropic.com".into();
        endpoint.wire = Wire::Anthropic;
        assert_eq!(endpoint.url(), "https://api.anthropic.com/v1/messages");
        endpoint.base_url = "https://api.openai.com/v1".into();
        endpoint.wire = Wire::OpenAiResponses;
        assert_eq!(endpoint.url(), "https://api.openai.com/v1/responses");
    }

    #[test]
    fn label_keeps_only_model_and_host() {
        let endpoint = ModelEndpoint::new(
            Wire::OpenAiChat,
            "https://user:pw@gw.example:8443/v1?key=abc",
            "small",
            None,
        );
        assert_eq!(
            endpoint.label().to_string(),
            "model `small` at gw.example:8443"
        );
    }

    #[test]
    fn debug_hides_key_and_header_values() {
        let mut endpoint = ModelEndpoint::new(
            Wire::Anthropic,
            "https://api.anthropic.com?key=in-query",
            "haiku",
            Some(Secret::new("sk-ant-very-secret")),
        );
        endpoint
            .extra_headers
            .push(("x-gateway-auth".into(), Secret::new("gw-secret")));
        let shown = format!("{endpoint:?} {endpoint:#?}");
        for secret in ["very-secret", "gw-secret", "in-query"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.contains("x-gateway-auth"), "{shown}");
    }
}
