//! The streaming tee: every upstream byte goes to the client as it arrives, and a copy is
//! read for usage and the stop reason.
//!
//! The body is never buffered whole. When the client goes away, axum drops the body
//! stream, which drops the upstream response and so cancels the upstream call; the tee's
//! guard still reports what it saw. Once the upstream has delivered its final event
//! ([`UsageObserver::has_ended`]) the call is complete: a client that closes its stream
//! then (Codex does at `response.completed`) has the whole answer, and the call's usage is
//! recorded and learned from like any other; only a client that leaves before the final
//! event cuts the call. When the upstream breaks mid-stream, or its body ends in
//! the middle of an event, an SSE client gets a provider-shaped `error` event (what the
//! provider itself sends on a failure mid-stream) after the last whole event
//! ([`EventFramer`]), and any other client sees the connection reset, as it would without
//! the proxy.

use std::time::Instant;

use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream};

use crate::clock::elapsed_ms;
use crate::provider::{ErrorKind, Provider, ProxyError};
use crate::sse_frame::EventFramer;
use crate::usage::{CallUsage, UsageObserver};
use crate::usage_filter::UsageChunkFilter;

/// How a teed body ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEnd {
    /// Every byte was delivered.
    Complete,
    /// The upstream failed mid-body.
    UpstreamFailed,
    /// The upstream's body ended cleanly, but in the middle of an SSE event.
    EndedMidEvent,
    /// The client went away first.
    ClientGone,
}

/// What the tee saw, handed to its `on_end` once.
#[derive(Debug, Clone)]
pub struct Teed {
    /// How the body ended.
    pub end: BodyEnd,
    /// Usage and stop reason.
    pub usage: CallUsage,
    /// Milliseconds from the tee's start to the first body byte.
    pub first_byte_ms: Option<u64>,
}

/// Reports when dropped, so a client disconnect is reported too.
struct Guard<F: FnOnce(Teed)> {
    observer: Option<UsageObserver>,
    end: BodyEnd,
    started: Instant,
    first_byte_ms: Option<u64>,
    on_end: Option<F>,
}

impl<F: FnOnce(Teed)> Drop for Guard<F> {
    fn drop(&mut self) {
        let (Some(on_end), Some(observer)) = (self.on_end.take(), self.observer.take()) else {
            return;
        };
        on_end(Teed {
            end: self.end,
            usage: observer.finish(),
            first_byte_ms: self.first_byte_ms,
        });
    }
}

/// Tees `upstream`: the returned stream yields its bytes unchanged (except, with `filter`,
/// the usage event the client did not ask for); `on_end` runs once when the body ends or
/// the client drops it.
pub fn tee<S, E, F>(
    provider: Provider,
    sse: bool,
    filter: Option<UsageChunkFilter>,
    upstream: S,
    observer: UsageObserver,
    started: Instant,
    on_end: F,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin + 'static,
    E: std::fmt::Display + Send + 'static,
    F: FnOnce(Teed) + Send + 'static,
{
    let guard = Guard {
        observer: Some(observer),
        end: BodyEnd::ClientGone,
        started,
        first_byte_ms: None,
        on_end: Some(on_end),
    };
    let framer = sse.then(EventFramer::default);
    stream::unfold(
        Some((upstream, guard, filter, framer)),
        move |state| async move {
            let (mut upstream, mut guard, mut filter, mut framer) = state?;
            match upstream.next().await {
                Some(Ok(chunk)) => {
                    guard.observe(&chunk);
                    let out = passed_on(chunk, framer.as_mut(), filter.as_mut());
                    Some((Ok(out), Some((upstream, guard, filter, framer))))
                }
                Some(Err(_)) if guard.end == BodyEnd::Complete => {
                    // The answer was whole; a connection that breaks after its final event
                    // loses the client nothing.
                    tracing::debug!("the upstream connection broke after the final event");
                    None
                }
                Some(Err(error)) => {
                    guard.end = BodyEnd::UpstreamFailed;
                    // The transport's message may quote the upstream URL with its query.
                    let error = mc_core::redact_credentials(&error.to_string());
                    tracing::warn!(%error, "upstream failed mid-body");
                    if sse {
                        let message =
                            format!("the upstream connection failed mid-stream ({error})");
                        drop(guard);
                        Some((Ok(error_event(provider, message)), None))
                    } else {
                        drop(guard);
                        Some((Err(std::io::Error::other(error)), None))
                    }
                }
                None if framer.as_ref().is_some_and(EventFramer::is_mid_event) => {
                    guard.end = BodyEnd::EndedMidEvent;
                    tracing::warn!("the upstream stream ended mid-event");
                    drop(guard);
                    let message = "the upstream stream ended in the middle of an event";
                    Some((Ok(error_event(provider, message.to_owned())), None))
                }
                None => {
                    guard.end = BodyEnd::Complete;
                    let rest = filter
                        .map(UsageChunkFilter::finish)
                        .filter(|rest| !rest.is_empty())?;
                    Some((Ok(rest), None))
                }
            }
        },
    )
}

impl<F: FnOnce(Teed)> Guard<F> {
    /// Notes a chunk of the body: the first byte's time, the usage it reports, and whether
    /// the answer is now whole.
    fn observe(&mut self, chunk: &Bytes) {
        if self.first_byte_ms.is_none() {
            self.first_byte_ms = Some(elapsed_ms(self.started));
        }
        if let Some(observer) = &mut self.observer {
            observer.push(chunk);
            if observer.has_ended() {
                self.end = BodyEnd::Complete;
            }
        }
    }
}

/// What the client gets of a chunk: on an SSE stream only whole events (`framer`), without
/// the usage chunk the client did not ask for (`filter`).
fn passed_on(
    chunk: Bytes,
    framer: Option<&mut EventFramer>,
    filter: Option<&mut UsageChunkFilter>,
) -> Bytes {
    let whole = match framer {
        Some(framer) => framer.push(chunk),
        None => chunk,
    };
    match filter {
        Some(filter) => filter.push(&whole),
        None => whole,
    }
}

/// The `error` event that ends a broken stream.
fn error_event(provider: Provider, message: String) -> Bytes {
    let error = ProxyError::new(provider, ErrorKind::Upstream { timed_out: false }, message);
    Bytes::from(error.sse_event())
}
