//! The answer of a call without the agent tools: the upstream's response streamed to the
//! client as it comes, teed so its usage is observed and the call's ledger row written when
//! the body ends.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::http::{Response, StatusCode, header};

use crate::app::App;
use crate::headers::client_response_headers;
use crate::ledger::CallRecord;
use crate::planned::Planned;
use crate::provider::Provider;
use crate::tee::{BodyEnd, Teed, tee};
use crate::usage::UsageObserver;
use crate::usage_filter::UsageChunkFilter;

/// Streams `response`, the upstream's success for `planned`, back to the client.
pub fn stream_back(
    app: Arc<App>,
    provider: Provider,
    planned: Planned,
    retried: bool,
    response: reqwest::Response,
    started: Instant,
) -> Response<Body> {
    let status = response.status();
    let headers = client_response_headers(response.headers());
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let sse = content_type
        .as_deref()
        .is_some_and(|kind| kind.starts_with("text/event-stream"));
    let observer = UsageObserver::new(provider, content_type.as_deref());
    let filter = (sse && planned.hide_usage_chunk).then(UsageChunkFilter::default);
    let record = CallRecord::start(provider, &planned, retried, started);
    let on_end = move |teed: Teed| {
        let error = match teed.end {
            BodyEnd::Complete => teed.usage.stream_error.clone(),
            BodyEnd::UpstreamFailed => Some("upstream failed mid-body".to_owned()),
            BodyEnd::EndedMidEvent => Some("upstream stream ended mid-event".to_owned()),
            BodyEnd::ClientGone => Some("client disconnected".to_owned()),
        };
        record.ended(&app, status.as_u16(), teed.usage, error, teed.first_byte_ms);
    };
    let body = tee(
        provider,
        sse,
        filter,
        response.bytes_stream(),
        observer,
        started,
        on_end,
    );
    let mut out = Response::new(Body::from_stream(body));
    *out.status_mut() = StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::OK);
    *out.headers_mut() = headers;
    out
}
