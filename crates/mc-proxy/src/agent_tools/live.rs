//! The plumbing of a live answer: the client's stream, written to as events are ready, and
//! one upstream round read event by event.
//!
//! A streamed answer in proxy tools mode is written by a task of its own
//! ([`super::live_anthropic`], [`super::live_chat`], [`super::live_responses`]) while the
//! client reads: the response goes out at once, and its body is fed through a small channel,
//! so the client gets each event the moment the proxy lets it through. When the client goes away the channel closes. The task watches for that while it
//! waits on the upstream, not only when it next sends: a round of calls to our tools sends
//! the client nothing, and each further round would cost the user a model call nobody reads.
//! So a client gone mid-round drops the upstream response there (cancelling the call, not
//! reading it to the end), gets the round's ledger row, and no further round starts; what
//! the hidden rounds ran so far is not stored as an exchange, since no client will send the
//! answer back ([`super::splice`] stores an exchange only once its answer is settled).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::time::Instant;

use axum::body::Body;
use axum::http::{Response, StatusCode, header};
use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream};
use mc_wire::sse::{SseDecoder, SseEvent};
use tokio::sync::mpsc;

use crate::clock::elapsed_ms;
use crate::headers::client_response_headers;
use crate::provider::{ErrorKind, Provider, ProxyError};
use crate::usage::{CallUsage, UsageObserver};
use crate::usage_filter::UsageChunkFilter;

/// Events the client's stream holds before the writer waits for the client to read.
const CHANNEL_EVENTS: usize = 64;

/// The client went away; nothing more can be sent.
#[derive(Debug)]
pub struct ClientGone;

/// The writing end of a client's stream.
pub struct Sink {
    sender: mpsc::Sender<Bytes>,
    /// Removes the usage chunk an OpenAI client did not ask for.
    filter: Option<UsageChunkFilter>,
}

impl Sink {
    /// Sends SSE text to the client.
    pub async fn send(&mut self, text: impl Into<Bytes>) -> Result<(), ClientGone> {
        let bytes: Bytes = text.into();
        let bytes = match &mut self.filter {
            Some(filter) => filter.push(&bytes),
            None => bytes,
        };
        if bytes.is_empty() {
            return Ok(());
        }
        self.sender.send(bytes).await.map_err(|_| ClientGone)
    }

    /// Whether the client has gone away (its end of the stream was dropped).
    pub fn is_gone(&self) -> bool {
        self.sender.is_closed()
    }

    /// Resolves once the client has gone away.
    pub async fn gone(&self) {
        self.sender.closed().await;
    }

    /// Ends the stream with a provider-shaped `error` event saying `message`.
    pub async fn fail(&mut self, provider: Provider, message: String) {
        tracing::warn!(%message, "a live tools answer ended in an error");
        let error = ProxyError::new(provider, ErrorKind::Upstream { timed_out: false }, message);
        // A client already gone needs no error.
        let _ = self.send(error.sse_event()).await;
    }
}

/// A client response that streams what its [`Sink`] is sent, with the upstream's `status`
/// and client-visible `headers`. `hide_usage` removes the OpenAI usage chunk the proxy asked
/// for and the client did not.
pub fn live_response(
    status: reqwest::StatusCode,
    headers: &reqwest::header::HeaderMap,
    hide_usage: bool,
) -> (Sink, Response<Body>) {
    let (sender, mut receiver) = mpsc::channel::<Bytes>(CHANNEL_EVENTS);
    let body = stream::poll_fn(move |cx| receiver.poll_recv(cx)).map(Ok::<_, Infallible>);
    let mut out = Response::new(Body::from_stream(body));
    *out.status_mut() = StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::OK);
    *out.headers_mut() = client_response_headers(headers);
    let filter = hide_usage.then(UsageChunkFilter::default);
    (Sink { sender, filter }, out)
}

/// An event as the upstream sent it: what the client gets of an event the proxy leaves
/// unchanged.
pub fn raw(event: &SseEvent) -> String {
    mc_wire::sse::encode_event(event.event.as_deref(), &event.data)
}

/// Whether an upstream response is an SSE stream.
pub fn is_stream(headers: &reqwest::header::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|kind| kind.starts_with("text/event-stream"))
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// One upstream round's stream, read event by event, with what its ledger row needs.
pub struct RoundEvents {
    status: StatusCode,
    bytes: ByteStream,
    decoder: Option<SseDecoder>,
    ready: VecDeque<SseEvent>,
    observer: UsageObserver,
    started: Instant,
    first_byte_ms: Option<u64>,
    failed: Option<String>,
}

/// How a round's stream ended, for its ledger row and what follows.
#[derive(Debug)]
pub struct RoundEnd {
    /// The upstream status.
    pub status: StatusCode,
    /// What the stream reported.
    pub usage: CallUsage,
    /// Why the stream did not end cleanly, if it did not; an error the upstream reported in
    /// the stream counts.
    pub failed: Option<String>,
    /// Whether the upstream itself reported the error in the stream (the client then got the
    /// provider's own error event).
    pub reported_upstream: bool,
    /// Milliseconds from the call's start to the first body byte.
    pub first_byte_ms: Option<u64>,
    /// Whether the upstream delivered its final event: the round is whole even when its
    /// client went away before reading it ([`UsageObserver::has_ended`]).
    pub ended: bool,
}

impl RoundEvents {
    /// Reads `response`, an upstream call started at `started`.
    pub fn new(provider: Provider, response: reqwest::Response, started: Instant) -> Self {
        let status = StatusCode::from_u16(response.status().as_u16()).unwrap_or(StatusCode::OK);
        let sse = is_stream(response.headers());
        let failed =
            (!sse).then(|| "the upstream answered a streamed round without a stream".to_owned());
        Self {
            status,
            bytes: Box::pin(response.bytes_stream()),
            decoder: sse.then(SseDecoder::new),
            ready: VecDeque::new(),
            observer: UsageObserver::new(provider, Some("text/event-stream")),
            started,
            first_byte_ms: None,
            failed,
        }
    }

    /// The next whole event, or `None` at the end of the stream or when it failed.
    pub async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            if self.failed.is_some() {
                return None;
            }
            let decoder = self.decoder.as_mut()?;
            match self.bytes.next().await? {
                Ok(chunk) => {
                    self.first_byte_ms
                        .get_or_insert_with(|| elapsed_ms(self.started));
                    self.observer.push(&chunk);
                    match decoder.push(&chunk) {
                        Ok(events) => self.ready.extend(events),
                        Err(error) => self.failed = Some(error.to_string()),
                    }
                }
                Err(error) => {
                    // The transport's message may quote the upstream URL with its query.
                    let error = mc_core::redact_credentials(&error.to_string());
                    self.failed = Some(format!(
                        "the upstream connection failed mid-stream ({error})"
                    ));
                }
            }
        }
    }

    /// Like [`Self::next`], unless the client of `sink` goes away first: then `None`, with
    /// `sent` set to the client's absence, and the proxy stops reading this round, which the
    /// caller ends by dropping it ([`Self::finish`]).
    pub async fn next_unless_gone(
        &mut self,
        sink: &Sink,
        sent: &mut Result<(), ClientGone>,
    ) -> Option<SseEvent> {
        tokio::select! {
            biased;
            () = sink.gone() => {
                *sent = Err(ClientGone);
                None
            }
            event = self.next() => event,
        }
    }

    /// How the stream ended; call once [`Self::next`] returned `None`, or the client went
    /// away.
    pub fn finish(self) -> RoundEnd {
        let ended = self.observer.has_ended();
        let usage = self.observer.finish();
        let mut failed = self.failed;
        if failed.is_none()
            && let Some(decoder) = self.decoder
            && decoder.finish().is_err()
        {
            failed = Some("the upstream stream ended in the middle of an event".to_owned());
        }
        let reported_upstream = failed.is_none() && usage.stream_error.is_some();
        if failed.is_none() {
            failed.clone_from(&usage.stream_error);
        }
        RoundEnd {
            status: self.status,
            usage,
            failed,
            reported_upstream,
            first_byte_ms: self.first_byte_ms,
            ended,
        }
    }
}
