//! Where the proxy listens and where it forwards.

use serde::Serialize;

use super::units::Bounds;

/// The HTTP proxy's addresses and limits (`magic-context serve`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProxyConfig {
    /// `host:port` to listen on. Loopback by default: the proxy sees API keys and whole
    /// conversations, so exposing it to a network must be a deliberate choice (DESIGN §7).
    pub listen: String,
    /// Base URL of the Anthropic Messages API that managed requests are forwarded to.
    pub upstream_anthropic: String,
    /// Base URL of the OpenAI API (Chat Completions, Responses) that managed requests are
    /// forwarded to.
    pub upstream_openai: String,
    /// Largest client request body accepted, in bytes. Anthropic rejects requests over 32 MB,
    /// so anything larger would fail upstream after costing the proxy the memory to read it.
    pub max_request_bytes: u64,
    /// Memory the per-session caches of `serve` may hold together, in MiB. Every cache is
    /// rebuilt from the store when it misses, so this trades memory for the time of a
    /// rebuild, never for correctness. 256 MiB keeps 16 live sessions of 400K tokens warm.
    pub cache_budget_mb: u64,
    /// Host names, besides `localhost` and IP addresses, that a request may name in its
    /// `Host` header, and that a browser page may come from (`Origin`; otherwise only
    /// loopback pages may): for a proxy behind the user's own gateway. Empty by default, because any web page the
    /// user opens can send requests to a loopback port, and a DNS-rebinding page names its
    /// own host.
    pub allowed_hosts: Vec<String>,
}

impl ProxyConfig {
    /// Accepted range of [`Self::max_request_bytes`]: at least 64 KiB (a long session's
    /// request is larger than that), at most 1 GiB (a request body is held in memory).
    pub const MAX_REQUEST_BYTES: Bounds = Bounds::count(64 * 1024, 1024 * 1024 * 1024, "bytes");
    /// Accepted range of [`Self::cache_budget_mb`]: 0 keeps nothing between requests
    /// (every pass rebuilds from the store), at most 64 GiB.
    pub const CACHE_BUDGET_MB: Bounds = Bounds::count(0, 64 * 1024, "MiB");

    /// [`Self::cache_budget_mb`] in bytes.
    pub fn cache_budget_bytes(&self) -> usize {
        usize::try_from(self.cache_budget_mb.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX)
    }
}

impl Default for ProxyConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:4141".to_owned(),
            upstream_anthropic: "https://api.anthropic.com".to_owned(),
            upstream_openai: "https://api.openai.com".to_owned(),
            max_request_bytes: 32 * 1024 * 1024,
            cache_budget_mb: 256,
            allowed_hosts: Vec::new(),
        }
    }
}

/// Why a `host:port` listen address is unusable, or `None` when it looks right.
///
/// Only the shape is checked here (name resolution is I/O and belongs to the proxy): a
/// non-empty host, and a port that fits in 16 bits. IPv6 hosts are written in brackets.
pub fn listen_address_problem(address: &str) -> Option<String> {
    let Some((host, port)) = address.rsplit_once(':') else {
        return Some(format!(
            "`{address}` is not `host:port` (e.g. \"127.0.0.1:4141\")"
        ));
    };
    if host.is_empty() {
        return Some(format!("`{address}` has no host (e.g. \"127.0.0.1:4141\")"));
    }
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return Some(format!(
            "`{address}`: write an IPv6 host in brackets, e.g. \"[::1]:4141\""
        ));
    }
    if port.parse::<u16>().is_err() {
        return Some(format!(
            "`{address}` has no valid port (0-65535) after the last `:`"
        ));
    }
    None
}

/// Why an upstream base URL is unusable, or `None` when it looks right.
///
/// The proxy appends provider paths (`/v1/messages`) to it, so it must be an absolute
/// http(s) URL; a trailing slash is tolerated by the proxy.
pub fn upstream_url_problem(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    match rest {
        None => Some(format!("`{url}` must start with https:// or http://")),
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            Some(format!("`{url}` has no host"))
        }
        Some(rest) if rest.chars().any(char::is_whitespace) => {
            Some(format!("`{url}` contains whitespace"))
        }
        Some(_) => None,
    }
}

/// Why an `allowed_hosts` entry is unusable, or `None` when it looks right: a bare host
/// name or address (a port, if given, is ignored when matching), not a URL or a pattern.
pub fn allowed_host_problem(host: &str) -> Option<String> {
    if host.is_empty() {
        return Some("an allowed host is empty".to_owned());
    }
    if host.contains("://") || host.contains('/') {
        return Some(format!(
            "`{host}` is a URL; name the host alone (e.g. \"gateway.internal\")"
        ));
    }
    if host.contains('*') {
        return Some(format!(
            "`{host}`: patterns are not accepted; name each host"
        ));
    }
    if host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some(format!("`{host}` contains whitespace"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_check_themselves() {
        let config = ProxyConfig::default();
        assert_eq!(listen_address_problem(&config.listen), None);
        assert_eq!(upstream_url_problem(&config.upstream_anthropic), None);
        assert_eq!(upstream_url_problem(&config.upstream_openai), None);
        assert!(
            ProxyConfig::MAX_REQUEST_BYTES
                .check(config.max_request_bytes)
                .is_ok()
        );
        assert!(
            ProxyConfig::CACHE_BUDGET_MB
                .check(config.cache_budget_mb)
                .is_ok()
        );
    }

    #[test]
    fn allowed_hosts_are_bare_names() {
        assert_eq!(allowed_host_problem("gateway.internal"), None);
        assert_eq!(allowed_host_problem("10.0.0.5:4141"), None);
        assert!(allowed_host_problem("").is_some());
        assert!(allowed_host_problem("https://gateway.internal").is_some());
        assert!(allowed_host_problem("*.internal").is_some());
        assert!(allowed_host_problem("a b").is_some());
    }

    #[test]
    fn listen_addresses() {
        assert_eq!(listen_address_problem("localhost:8080"), None);
        assert_eq!(listen_address_problem("[::1]:4141"), None);
        assert!(listen_address_problem("4141").is_some());
        assert!(listen_address_problem(":4141").is_some());
        assert!(listen_address_problem("::1:4141").is_some());
        assert!(listen_address_problem("127.0.0.1:99999").is_some());
    }

    #[test]
    fn upstream_urls() {
        assert_eq!(upstream_url_problem("http://127.0.0.1:9000/base"), None);
        assert!(upstream_url_problem("api.anthropic.com").is_some());
        assert!(upstream_url_problem("https://").is_some());
        assert!(upstream_url_problem("https://a b").is_some());
    }
}
