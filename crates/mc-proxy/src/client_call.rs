//! The first stage of a managed call: the client's call read whole (its headers, path and
//! body, within the size and time limits).

use std::sync::Arc;

use axum::extract::Request;
use axum::http::HeaderMap;
use bytes::Bytes;

use crate::app::App;
use crate::provider::{Provider, ProxyError};
use crate::request_body::read_body;

/// A client's model call as it arrived.
pub struct ClientCall {
    pub headers: Arc<HeaderMap>,
    /// The path and query the client called.
    pub path: String,
    /// The body the pass reads (the client's, or with the proxy's tools added).
    pub body: Bytes,
}

/// Reads the client's call: its headers, path and body (within the size and time limits).
pub async fn read_call(
    app: &App,
    provider: Provider,
    request: Request,
) -> Result<ClientCall, ProxyError> {
    let (parts, body) = request.into_parts();
    let body = read_body(
        provider,
        &parts.headers,
        body,
        app.settings.max_request_bytes,
        app.settings.client_limits.idle_timeout,
    )
    .await?;
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |pq| pq.as_str())
        .to_owned();
    Ok(ClientCall {
        headers: Arc::new(parts.headers),
        path,
        body,
    })
}
