//! Which calls get our tools from the proxy: the mode, the client's host, and whether the
//! call carries credentials.

use axum::http::HeaderMap;
use mc_core::Host;
use mc_core::config::ToolsMode;

use crate::app::App;
use crate::provider::Provider;
use crate::session_resolve::SessionHints;

/// Whether a call may get our tools, from the mode and its headers alone: the cheap test
/// every managed call takes, so that a call which cannot get them (`off`, `mcp`, Claude
/// Code's headers under `auto`) is not decoded a second time.
///
/// A call with no credentials to a provider that needs them never gets them: the tools read
/// the project's history, and a caller without a key is not the user's agent.
pub fn may_serve(app: &App, provider: Provider, headers: &HeaderMap) -> bool {
    let upstream = match provider {
        Provider::Anthropic => &app.settings.upstream_anthropic,
        Provider::OpenAi | Provider::OpenAiResponses => &app.settings.upstream_openai,
    };
    (carries_credentials(headers) || is_local_upstream(upstream))
        && app
            .engine()
            .is_ok_and(|engine| served_here(engine.config().tools.mode, headers, None))
}

/// Whether a request carries a provider credential (an API key or a login's token).
fn carries_credentials(headers: &HeaderMap) -> bool {
    ["x-api-key", "authorization", "api-key"]
        .iter()
        .any(|name| headers.get(*name).is_some_and(|value| !value.is_empty()))
}

/// Whether an upstream base URL is a server on this machine (a local model server, which
/// may need no key; a remote provider always does).
fn is_local_upstream(base: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base) else {
        return false;
    };
    let host = url.host_str().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

/// Whether calls of this client get our tools from the proxy: `auto` leaves Claude Code and
/// Codex, whose setup registers our MCP server, to it (recognised by their session headers,
/// Claude Code's `metadata.user_id` or the user agent, as session resolution does), so the
/// model never sees the tools twice (Codex can hide MCP tools behind its tool search, where
/// no tool list shows them); other clients with our MCP server are recognised by their tool
/// list ([`offers_ours`]).
pub(super) fn served_here(
    mode: ToolsMode,
    headers: &HeaderMap,
    metadata_user_id: Option<&str>,
) -> bool {
    match mode {
        ToolsMode::Proxy => true,
        ToolsMode::Mcp | ToolsMode::Off => false,
        ToolsMode::Auto => !matches!(
            SessionHints::read(headers, metadata_user_id).host,
            Host::ClaudeCode | Host::Codex
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_caller_with_a_key_gets_tools_from_a_remote_provider() {
        let mut headers = HeaderMap::new();
        assert!(!carries_credentials(&headers));
        headers.insert("x-api-key", "".parse().unwrap());
        assert!(!carries_credentials(&headers), "an empty key is none");
        for name in ["x-api-key", "authorization", "api-key"] {
            let mut headers = HeaderMap::new();
            headers.insert(name, "secret".parse().unwrap());
            assert!(carries_credentials(&headers), "{name}");
        }
        for local in [
            "http://127.0.0.1:11434",
            "http://localhost:8080/v1",
            "http://[::1]:9000",
        ] {
            assert!(is_local_upstream(local), "{local}");
        }
        for remote in [
            "https://api.anthropic.com",
            "https://api.openai.com",
            "http://10.0.0.5:8080",
            "http://localhost.example",
            "not a url",
        ] {
            assert!(!is_local_upstream(remote), "{remote}");
        }
    }
}
