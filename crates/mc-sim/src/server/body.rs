//! The HTTP bodies the simulator writes: JSON documents and SSE streams, and how generated
//! text is cut into stream deltas.

use std::convert::Infallible;

use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

/// The most characters one text or argument delta carries. Small enough that every
/// non-trivial block streams in several pieces, as a real model's output does, so clients
/// and proxies are exercised on reassembly.
pub(crate) const DELTA_CHARS: usize = 24;

/// The `request-id` header Anthropic sets on every response.
pub(crate) static REQUEST_ID: HeaderName = HeaderName::from_static("request-id");

/// A JSON response of `status` with `bytes` as its body.
pub(crate) fn json(status: u16, bytes: Vec<u8>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        bytes,
    )
        .into_response()
}

/// A JSON response of `status` with `value` as its body.
pub(crate) fn json_value(status: u16, value: &serde_json::Value) -> Response {
    json(status, value.to_string().into_bytes())
}

/// A 200 `text/event-stream` response sending `events` (already SSE-encoded) one body chunk
/// each, so a client sees event boundaries fall where a real stream puts them.
pub(crate) fn sse(events: Vec<String>) -> Response {
    let chunks = events
        .into_iter()
        .map(|event| Ok::<Bytes, Infallible>(Bytes::from(event)));
    (
        StatusCode::OK,
        [
            (
                CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream; charset=utf-8"),
            ),
            (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        Body::from_stream(futures_util::stream::iter(chunks)),
    )
        .into_response()
}

/// Adds a `request-id` header.
pub(crate) fn with_request_id(mut response: Response, request_id: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(request_id) {
        response.headers_mut().insert(REQUEST_ID.clone(), value);
    }
    response
}

/// Cuts `text` into pieces of at most `max_chars` characters, never inside a character.
/// An empty text gives no pieces.
pub(crate) fn pieces(text: &str, max_chars: usize) -> Vec<&str> {
    let max_chars = max_chars.max(1);
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let cut = rest
            .char_indices()
            .nth(max_chars)
            .map_or(rest.len(), |(at, _)| at);
        let (piece, tail) = rest.split_at(cut);
        out.push(piece);
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_respect_characters() {
        assert!(pieces("", 4).is_empty());
        assert_eq!(pieces("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(pieces("héllo wörld", 3), ["hél", "lo ", "wör", "ld"]);
        assert_eq!(pieces("abc", 0), ["a", "b", "c"]);
    }
}
