//! Sending a planned call upstream and judging the answer: a success for the client, an
//! overflow to retry with a new plan, or a refusal the client gets as the provider sent it.
//! A refusal's ledger row is written here; a success's as its body ends.

use axum::body::Body;
use axum::http::{HeaderMap, Response, StatusCode, header};
use bytes::Bytes;
use futures_util::StreamExt;
use std::time::Instant;

use crate::app::App;
use crate::chunked_body::ChunkedBody;
use crate::client_call::ClientCall;
use crate::forward::upstream_error;
use crate::headers::{client_response_headers, managed_request_headers};
use crate::ledger::{CallRecord, error_text};
use crate::overflow::{Overflow, parse_overflow};
use crate::planned::Planned;
use crate::provider::{Provider, ProxyError};
use crate::settings::ProxySettings;
use crate::stream_overflow::{self, Peeked};
use crate::success_error;

/// Largest upstream error body read whole (error bodies are small JSON).
const MAX_ERROR_BODY_BYTES: usize = 1024 * 1024;

/// What an upstream answer means for the call.
pub enum Upstream {
    /// A success: the client gets it.
    Success(reqwest::Response),
    /// The provider refused the request as too long: retried once with an emergency plan.
    Overflow(Overflow),
    /// Any other refusal: the client gets the provider's answer as it is.
    Refused(Response<Body>),
}

/// Sends one attempt upstream; a call that could not be made is recorded and refused in
/// the provider's shape.
pub async fn send(
    app: &App,
    provider: Provider,
    call: &ClientCall,
    planned: &Planned,
    retried: bool,
    started: Instant,
) -> Result<reqwest::Response, ProxyError> {
    let body = planned.upstream_body.clone();
    match send_upstream(app, provider, &call.headers, &call.path, body).await {
        Ok(response) => Ok(success_error::reclassify(response).await),
        Err(error) => {
            let refusal = upstream_error(provider, &error);
            CallRecord::start(provider, planned, retried, started).unanswered(
                app,
                Some(refusal.status().as_u16()),
                refusal.message.clone(),
            );
            Err(refusal)
        }
    }
}

/// What an upstream answer means ([`Upstream`]). A refusal's ledger row is written here;
/// a success's when its body ends. A Responses backend may refuse an overflow inside a 200
/// stream: caught before any of it is forwarded, it is an overflow like the HTTP error
/// ([`crate::stream_overflow`]). A side call's overflow is the host's to handle, and so is
/// that of a session whose window the host manages (compaction off: a retry would send the
/// same messages again); only the first attempt is retried.
pub async fn judge(
    app: &App,
    provider: Provider,
    call: &ClientCall,
    planned: &Planned,
    retried: bool,
    started: Instant,
    response: reqwest::Response,
) -> Upstream {
    let status = response.status();
    let host_managed = planned
        .pass
        .as_ref()
        .is_some_and(|pass| !pass.mode.rewrites_tail());
    let retriable = !retried && planned.side_call.is_none() && !host_managed;
    if status.is_success() {
        if !(retriable
            && provider == Provider::OpenAiResponses
            && is_event_stream(response.headers()))
        {
            return Upstream::Success(response);
        }
        return match stream_overflow::peek(response).await {
            Peeked::Stream(response) => Upstream::Success(response),
            Peeked::Overflow { overflow, error } => {
                CallRecord::start(provider, planned, retried, started).refused(
                    app,
                    status.as_u16(),
                    error_text(&error, &call.headers),
                );
                Upstream::Overflow(overflow)
            }
        };
    }
    let upstream_headers = client_response_headers(response.headers());
    let error_body = read_limited(response).await;
    let overflow = parse_overflow(status.as_u16(), &error_body);
    CallRecord::start(provider, planned, retried, started).refused(
        app,
        status.as_u16(),
        error_text(&error_body, &call.headers),
    );
    if let (Some(overflow), true) = (overflow, retriable) {
        return Upstream::Overflow(overflow);
    }
    let mut out = Response::new(Body::from(error_body));
    *out.status_mut() = StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    *out.headers_mut() = upstream_headers;
    Upstream::Refused(out)
}

/// Whether a response's body is an SSE stream.
fn is_event_stream(headers: &reqwest::header::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|kind| kind.starts_with("text/event-stream"))
}

/// Sends a planned body upstream on the client's path, with the client's headers.
pub async fn send_upstream(
    app: &App,
    provider: Provider,
    headers: &HeaderMap,
    path_and_query: &str,
    body: ChunkedBody,
) -> Result<reqwest::Response, reqwest::Error> {
    let base = app.settings.upstream(provider);
    app.client
        .post(ProxySettings::upstream_url(base, path_and_query))
        .headers(managed_request_headers(headers))
        .body(crate::chunked_body::request_body(body))
        .send()
        .await
}

async fn read_limited(response: reqwest::Response) -> Bytes {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        let room = MAX_ERROR_BODY_BYTES.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if room <= chunk.len() {
            break;
        }
    }
    Bytes::from(body)
}
