//! How the proxy runs: where it listens, where it forwards, its limits.

use std::net::SocketAddr;
use std::time::Duration;

use mc_engine::CacheBudget;
use mc_llm::RetryPolicy;

use crate::client_connections::ClientLimits;
use crate::provider::Provider;

/// The proxy's settings, resolved from the command line and the config file.
#[derive(Debug, Clone)]
pub struct ProxySettings {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Base URL of the Anthropic API (no trailing slash needed).
    pub upstream_anthropic: String,
    /// Base URL of the OpenAI API.
    pub upstream_openai: String,
    /// Largest client request body accepted, in bytes.
    pub max_request_bytes: usize,
    /// Overrides every model's context window, in tokens.
    pub context_window: Option<u64>,
    /// How long the upstream may stay silent (before its headers, or between two chunks of
    /// a body) before the call is abandoned.
    pub upstream_idle_timeout: Duration,
    /// How long each historian model call may take and how often a failed one is retried.
    /// The runs are in the background, so the default favours finishing; a historian on a
    /// fast local model can fail over sooner with shorter attempts.
    pub historian_retry: RetryPolicy,
    /// The memory the proxy's per-session caches may hold (the engine's has its own, from
    /// the same kind of budget).
    pub cache_budget: CacheBudget,
    /// Host names, besides `localhost` and IP addresses, that requests may be addressed to
    /// and browser pages may come from ([`crate::browser_guard`]).
    pub allowed_hosts: Vec<String>,
    /// How long a client may stay silent, and how many connections one address may hold.
    pub client_limits: ClientLimits,
    /// The user configuration file the proxy was started with, which the dashboard shows
    /// and edits; `None`: it edits no user file.
    pub user_config: Option<std::path::PathBuf>,
}

impl ProxySettings {
    /// The upstream base URL a request of `provider` is forwarded to.
    pub fn upstream(&self, provider: Provider) -> &str {
        match provider {
            Provider::Anthropic => &self.upstream_anthropic,
            Provider::OpenAi | Provider::OpenAiResponses => &self.upstream_openai,
        }
    }

    /// The upstream URL for a client request to `path_and_query` on `base`.
    pub fn upstream_url(base: &str, path_and_query: &str) -> String {
        format!("{}{path_and_query}", base.trim_end_matches('/'))
    }
}
