//! Refusing what a web page can send: the proxy listens on loopback, and any page the user
//! opens can send requests there.
//!
//! A page can `POST` to `http://127.0.0.1:4141/v1/messages` with `Content-Type: text/plain`
//! and no preflight; it cannot read the answer, but before this guard the conversation it
//! wrote became part of the project's searchable history, where the user's real agent later
//! found it. A DNS-rebinding page (its own name, re-pointed at 127.0.0.1) is same-origin
//! with the proxy and can read answers too. Three checks, before anything is read or stored:
//!
//! - `Host` must name the proxy: `localhost`, an IP address (a rebinding page always names
//!   its own domain, so a literal address cannot be one; the listen address is one), or one
//!   of `proxy.allowed_hosts`.
//! - An `Origin`, which browsers add to every cross-origin request and to every `POST`, must
//!   be a loopback one (`localhost`, `127.0.0.0/8`, `[::1]`) or an allowed host. Agents are
//!   programs, not pages, and send none; `Origin: null` (a sandboxed or `file:` page) is a
//!   page too.
//! - A managed model call must say `Content-Type: application/json`, as every provider SDK
//!   does: the types a page may send without a preflight (`text/plain`, forms) are refused.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::app::App;
use crate::forward::provider_of_path;
use crate::provider::{ErrorKind, Provider, ProxyError};
use crate::settings::ProxySettings;

/// The paths whose `POST`s the proxy rewrites (and so stores).
const MANAGED_PATHS: [&str; 3] = ["/v1/messages", "/v1/chat/completions", "/v1/responses"];

/// Runs the checks before every route; a request that fails one gets a provider-shaped
/// `403` (or `415` for a body that is not JSON) and goes no further.
pub async fn guard(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    match refusal(&app.settings, &request) {
        Some(error) => {
            tracing::warn!(
                status = %error.status(),
                message = %error.message,
                "refused a request a web page could have sent"
            );
            error.into_response()
        }
        None => next.run(request).await,
    }
}

/// Why the proxy refuses `request`, or `None` when it may go on.
fn refusal(settings: &ProxySettings, request: &Request) -> Option<ProxyError> {
    let path = request.uri().path();
    let provider = if path == "/v1/responses" {
        Provider::OpenAiResponses
    } else {
        provider_of_path(path)
    };
    let headers = request.headers();
    let forbidden =
        |message: String| Some(ProxyError::new(provider, ErrorKind::Forbidden, message));
    if let Some(host) = requested_host(request)
        && !host_is_ours(settings, &host)
    {
        return forbidden(format!(
            "the request is addressed to `{host}`, which is not this proxy (a web page may \
             have sent it); use `localhost` or the listen address, or add the name to \
             `proxy.allowed_hosts` if the proxy sits behind your own gateway"
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = String::from_utf8_lossy(origin.as_bytes()).into_owned();
        if !origin_is_local(settings, &origin) {
            return forbidden(format!(
                "requests from web pages are refused (Origin `{origin}`); only loopback \
                 origins and `proxy.allowed_hosts` may call the proxy"
            ));
        }
    }
    if request.method() == Method::POST && MANAGED_PATHS.contains(&path) && !says_json(headers) {
        return Some(ProxyError::new(
            provider,
            ErrorKind::NotJson,
            "a model call must be sent with `Content-Type: application/json`",
        ));
    }
    None
}

/// The host the request names, lowercased, without its port and a trailing dot: the `Host`
/// header, or the URI's authority (HTTP/2); `None` when it names none (not a browser).
fn requested_host(request: &Request) -> Option<String> {
    let authority = match request.headers().get(header::HOST) {
        Some(value) => String::from_utf8_lossy(value.as_bytes()).into_owned(),
        None => request.uri().authority()?.as_str().to_owned(),
    };
    Some(host_of_authority(&authority))
}

/// `host` of `host[:port]` or `[v6][:port]`, lowercased, without a trailing dot.
fn host_of_authority(authority: &str) -> String {
    let authority = authority.trim();
    let host = if let Some(rest) = authority.strip_prefix('[') {
        rest.split_once(']').map_or(rest, |(inside, _)| inside)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
            _ => authority,
        }
    };
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// Whether a request naming `host` is addressed to this proxy.
fn host_is_ours(settings: &ProxySettings, host: &str) -> bool {
    host == "localhost" || host.parse::<IpAddr>().is_ok() || is_allowed(settings, host)
}

/// Whether `origin` (`scheme://host[:port]`) is a loopback page or an allowed host's.
fn origin_is_local(settings: &ProxySettings, origin: &str) -> bool {
    let Some((scheme, rest)) = origin.trim().split_once("://") else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return false;
    }
    let host = host_of_authority(rest.split('/').next().unwrap_or(rest));
    host == "localhost"
        || host
            .parse::<IpAddr>()
            .is_ok_and(|address| address.is_loopback())
        || is_allowed(settings, &host)
}

fn is_allowed(settings: &ProxySettings, host: &str) -> bool {
    settings
        .allowed_hosts
        .iter()
        .any(|allowed| host_of_authority(allowed) == host)
}

/// Whether the body is declared JSON (`application/json`, any parameters).
fn says_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|kind| kind.trim().eq_ignore_ascii_case("application/json"))
}

/// The guard's answer for a `POST` to `path` with these headers, for the fuzz targets in
/// `fuzz/`: `Some(status)` when refused. Headers whose value HTTP cannot carry are left out,
/// as a server never receives them. Checks, and panics on a breach of, what must hold
/// whatever the bytes: `localhost` and IP addresses are hosts of the proxy, and a request
/// carrying an `Origin` is refused unless that origin is a loopback page.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub fn check_screening(path: &str, headers: &[(&str, &[u8])]) -> Option<u16> {
    let settings = ProxySettings {
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 4141)),
        upstream_anthropic: "https://api.anthropic.com".to_owned(),
        upstream_openai: "https://api.openai.com".to_owned(),
        max_request_bytes: 1 << 20,
        context_window: None,
        upstream_idle_timeout: std::time::Duration::from_secs(60),
        historian_retry: mc_llm::RetryPolicy::default(),
        cache_budget: mc_engine::CacheBudget::default(),
        allowed_hosts: Vec::new(),
        client_limits: crate::ClientLimits::default(),
        user_config: None,
    };
    let mut builder = axum::http::Request::builder().method(Method::POST);
    builder = match path.parse::<axum::http::Uri>() {
        Ok(uri) => builder.uri(uri),
        Err(_) => builder.uri("/v1/messages"),
    };
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            axum::http::HeaderName::from_bytes(name.as_bytes()),
            axum::http::HeaderValue::from_bytes(value),
        ) {
            builder = builder.header(name, value);
        }
    }
    let Ok(request) = builder.body(axum::body::Body::empty()) else {
        return None;
    };
    let refused = refusal(&settings, &request);
    let host_named = requested_host(&request);
    let names_proxy = host_named
        .as_deref()
        .is_none_or(|host| host == "localhost" || host.parse::<IpAddr>().is_ok());
    let origin = request.headers().get(header::ORIGIN);
    if refused
        .as_ref()
        .is_some_and(|error| error.kind == ErrorKind::Forbidden)
    {
        assert!(
            !names_proxy
                || origin.is_some_and(|origin| {
                    !origin_is_local(&settings, &String::from_utf8_lossy(origin.as_bytes()))
                }),
            "refused a request to the proxy from no foreign page"
        );
    }
    if refused.is_none() {
        assert!(names_proxy, "let a foreign host through");
        if let Some(origin) = origin {
            let origin = String::from_utf8_lossy(origin.as_bytes()).into_owned();
            assert!(
                origin_is_local(&settings, &origin),
                "let a page through: {origin}"
            );
        }
    }
    refused.map(|error| error.status().as_u16())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    fn settings(allowed: &[&str]) -> ProxySettings {
        ProxySettings {
            listen: "127.0.0.1:4141".parse().unwrap(),
            upstream_anthropic: "https://api.anthropic.com".into(),
            upstream_openai: "https://api.openai.com".into(),
            max_request_bytes: 1 << 20,
            context_window: None,
            upstream_idle_timeout: std::time::Duration::from_secs(60),
            historian_retry: mc_llm::RetryPolicy::default(),
            cache_budget: mc_engine::CacheBudget::default(),
            allowed_hosts: allowed.iter().map(|&host| host.to_owned()).collect(),
            client_limits: crate::ClientLimits::default(),
            user_config: None,
        }
    }

    fn request(method: &str, path: &str, headers: &[(&str, &str)]) -> Request {
        let mut builder = Request::builder().method(method).uri(path);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(Body::empty()).unwrap()
    }

    fn refused(settings: &ProxySettings, headers: &[(&str, &str)]) -> Option<ErrorKind> {
        let mut all = vec![("content-type", "application/json")];
        all.extend_from_slice(headers);
        refusal(settings, &request("POST", "/v1/messages", &all)).map(|error| error.kind)
    }

    #[test]
    fn hosts_that_name_the_proxy_pass() {
        let settings = settings(&["gateway.internal"]);
        for host in [
            "127.0.0.1:4141",
            "localhost:4141",
            "LOCALHOST",
            "localhost.:4141",
            "[::1]:4141",
            "10.1.2.3:4141",
            "gateway.internal:443",
            "Gateway.Internal",
        ] {
            assert_eq!(refused(&settings, &[("host", host)]), None, "{host}");
        }
        assert_eq!(refused(&settings, &[]), None, "no Host at all");
    }

    #[test]
    fn other_hosts_are_refused() {
        let settings = settings(&["gateway.internal"]);
        for host in [
            "attacker.example:4141",
            "localhost.attacker.example",
            "127.0.0.1.attacker.example:4141",
            "gateway.internal.evil",
        ] {
            assert_eq!(
                refused(&settings, &[("host", host)]),
                Some(ErrorKind::Forbidden),
                "{host}"
            );
        }
    }

    #[test]
    fn only_loopback_and_allowed_origins_pass() {
        let settings = settings(&["gateway.internal"]);
        for origin in [
            "http://localhost:3000",
            "http://127.0.0.1:4141",
            "http://127.9.9.9",
            "http://[::1]:8080",
            "https://gateway.internal",
        ] {
            assert_eq!(refused(&settings, &[("origin", origin)]), None, "{origin}");
        }
        for origin in [
            "http://attacker.example",
            "null",
            "http://10.1.2.3:4141",
            "file://",
            "chrome-extension://abcdef",
            "http://localhost.attacker.example",
        ] {
            assert_eq!(
                refused(&settings, &[("origin", origin)]),
                Some(ErrorKind::Forbidden),
                "{origin}"
            );
        }
    }

    #[test]
    fn managed_calls_must_be_json() {
        let settings = settings(&[]);
        for (kind, refused_as) in [
            (Some("application/json"), None),
            (Some("application/json; charset=utf-8"), None),
            (Some("Application/JSON"), None),
            (Some("text/plain;charset=UTF-8"), Some(ErrorKind::NotJson)),
            (
                Some("application/x-www-form-urlencoded"),
                Some(ErrorKind::NotJson),
            ),
            (Some("multipart/form-data"), Some(ErrorKind::NotJson)),
            (None, Some(ErrorKind::NotJson)),
        ] {
            for path in MANAGED_PATHS {
                let headers: Vec<_> = kind
                    .map(|kind| ("content-type", kind))
                    .into_iter()
                    .collect();
                let got = refusal(&settings, &request("POST", path, &headers));
                assert_eq!(got.map(|error| error.kind), refused_as, "{path} {kind:?}");
            }
        }
        // Forwarded routes and other methods carry what they carry.
        assert!(
            refusal(
                &settings,
                &request("POST", "/v1/messages/count_tokens", &[])
            )
            .is_none()
        );
        assert!(refusal(&settings, &request("GET", "/v1/models", &[])).is_none());
    }

    #[test]
    fn refusals_are_shaped_for_the_route() {
        let settings = settings(&[]);
        let origin = [("origin", "http://attacker.example")];
        let error = refusal(&settings, &request("POST", "/v1/responses", &origin)).unwrap();
        assert_eq!(error.provider, Provider::OpenAiResponses);
        let error = refusal(&settings, &request("POST", "/v1/chat/completions", &origin)).unwrap();
        assert_eq!(error.provider, Provider::OpenAi);
        let error = refusal(&settings, &request("POST", "/v1/messages", &origin)).unwrap();
        assert_eq!(error.provider, Provider::Anthropic);
        assert_eq!(error.status().as_u16(), 403);
    }

    #[test]
    fn a_network_listen_address_is_a_host_but_not_an_origin() {
        let mut settings = settings(&[]);
        settings.listen = "192.168.1.7:4141".parse().unwrap();
        assert_eq!(refused(&settings, &[("host", "192.168.1.7:4141")]), None);
        assert_eq!(
            refused(&settings, &[("origin", "http://192.168.1.7:4141")]),
            Some(ErrorKind::Forbidden),
            "a page on the network is still a page"
        );
    }
}
