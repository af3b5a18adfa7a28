//! Verbatim forwarding of everything the proxy does not manage: `count_tokens`,
//! `/v1/models`, any other path and method.
//!
//! Bodies stream both ways untouched (compressed or not); only hop-by-hop headers are
//! dropped. Anthropic-shaped paths go to the Anthropic upstream, everything else to OpenAI's
//! (`/v1/chat/…`, `/v1/responses`, `/v1/embeddings`, …).
//!
//! A WebSocket upgrade is the one request not forwarded: the proxy relays HTTP only (the
//! `Upgrade` header is hop-by-hop), and Codex's built-in OpenAI provider opens each session
//! with `GET /v1/responses` asking for one. Answered `426`, it streams over HTTP at once;
//! forwarded without the header, the upstream's `404` made it retry seven times (~6 s).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Response, StatusCode};
use axum::response::IntoResponse;
use futures_util::TryStreamExt;

use crate::app::App;
use crate::headers::{client_response_headers, upstream_request_headers};
use crate::provider::{ErrorKind, Provider, ProxyError};
use crate::settings::ProxySettings;

/// Which provider a path belongs to.
pub fn provider_of_path(path: &str) -> Provider {
    if path.starts_with("/v1/messages") || path.starts_with("/v1/complete") {
        Provider::Anthropic
    } else if path.starts_with("/v1/models") {
        // Both providers serve it; Anthropic clients are the ones that send `x-api-key`.
        Provider::Anthropic
    } else {
        Provider::OpenAi
    }
}

/// Whether `request` asks to switch to the WebSocket protocol.
fn asks_for_websocket(request: &Request) -> bool {
    request
        .headers()
        .get_all(axum::http::header::UPGRADE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|value| {
            value
                .split(',')
                .any(|protocol| protocol.trim().eq_ignore_ascii_case("websocket"))
        })
}

/// Forwards a request verbatim.
pub async fn forward(State(app): State<Arc<App>>, request: Request) -> Response<Body> {
    if asks_for_websocket(&request) {
        return ProxyError::new(
            provider_of_path(request.uri().path()),
            ErrorKind::UpgradeRequired,
            "the proxy relays HTTP only, not WebSockets: send this call as an HTTP request \
             (streaming works there)",
        )
        .into_response();
    }
    let (parts, body) = request.into_parts();
    let path_and_query = parts
        .uri
        .path_and_query()
        .map_or("/", |pq| pq.as_str())
        .to_owned();
    if !path_and_query.starts_with('/') {
        return not_a_path(&parts.method, &path_and_query);
    }
    let mut provider = provider_of_path(parts.uri.path());
    if parts.uri.path().starts_with("/v1/models")
        && parts.headers.contains_key("authorization")
        && !parts.headers.contains_key("x-api-key")
    {
        provider = Provider::OpenAi;
    }
    let base = app.settings.upstream(provider);
    let url = ProxySettings::upstream_url(base, &path_and_query);
    let upstream = app
        .client
        .request(parts.method, url)
        .headers(upstream_request_headers(&parts.headers))
        .body(reqwest::Body::wrap_stream(body.into_data_stream()))
        .send()
        .await;
    match upstream {
        Ok(response) => {
            let status = response.status();
            let headers = client_response_headers(response.headers());
            let mut out = Response::new(Body::from_stream(
                response.bytes_stream().map_err(std::io::Error::other),
            ));
            *out.status_mut() =
                StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
            *out.headers_mut() = headers;
            out
        }
        Err(error) => upstream_error(provider, &error).into_response(),
    }
}

/// The answer to a request whose target is not a path: `OPTIONS *` asks what the server
/// supports and is answered here; anything else cannot be forwarded to an upstream URL.
fn not_a_path(method: &axum::http::Method, target: &str) -> Response<Body> {
    if method == axum::http::Method::OPTIONS && target == "*" {
        let mut out = Response::new(Body::empty());
        *out.status_mut() = StatusCode::NO_CONTENT;
        out.headers_mut().insert(
            axum::http::header::ALLOW,
            axum::http::HeaderValue::from_static("GET, POST, OPTIONS"),
        );
        return out;
    }
    ProxyError::new(
        Provider::OpenAi,
        ErrorKind::InvalidRequest,
        format!("the request target `{target}` is not a path; send requests to a path such as /v1/messages"),
    )
    .into_response()
}

/// The client-facing error for an upstream that could not be reached or timed out, with
/// anything credential-shaped in the transport's message blanked.
pub fn upstream_error(provider: Provider, error: &reqwest::Error) -> ProxyError {
    let timed_out = error.is_timeout();
    let what = if timed_out {
        "the upstream did not answer in time"
    } else if error.is_connect() {
        "could not connect to the upstream"
    } else {
        "the upstream request failed"
    };
    // reqwest names the URL it was sending to, query and userinfo included, where some
    // gateways take the key. The client is told which provider, not where the proxy sends
    // it (the log keeps the address, credentials blanked).
    let chain = mc_core::redact_credentials(&error_chain(error));
    if let Some(url) = error.url() {
        tracing::warn!(upstream = %mc_core::redact_credentials(url.as_str()), error = %chain, "{what}");
    }
    let chain = match error.url() {
        Some(url) => chain.replace(url.as_str(), "the upstream"),
        None => chain,
    };
    ProxyError::new(
        provider,
        ErrorKind::Upstream { timed_out },
        format!("{what} ({chain})"),
    )
}

/// An error and its sources, one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
