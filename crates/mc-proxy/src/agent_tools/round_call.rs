//! One client request's upstream call, as the rounds of its answer make it: the next
//! round planned and sent, its ledger row, and what the client gets when a round fails.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::http::{HeaderMap, Response, StatusCode};
use axum::response::IntoResponse;
use mc_wire::sse::encode_event;
use serde_json::Value;

use super::live::Sink;
use super::reply::{Buffered, read_whole};
use crate::app::App;
use crate::chunked_body::ChunkedBody;
use crate::forward::upstream_error;
use crate::ledger::CallRecord;
use crate::plan::plan;
use crate::planned::Planned;
use crate::provider::{ErrorKind, Provider, ProxyError};
use crate::upstream::send_upstream;
use crate::usage::CallUsage;

/// One client request's upstream call and where it goes.
pub struct Call {
    /// The client's headers.
    pub headers: Arc<HeaderMap>,
    /// The path and query the client called.
    pub path: String,
    /// What the pass planned for it.
    pub planned: Planned,
    /// Whether it is the overflow retry.
    pub retried: bool,
    /// When it was sent.
    pub started: Instant,
}

/// What follows a round the model finished.
pub enum Settled {
    /// No call of ours: the client gets the answer as it is.
    Final,
    /// The client gets the answer without the content blocks at `ours` (indexes of our
    /// calls, run here), as its turn's end; `capped` when the round limit ended it, and the
    /// answer ends with a line saying so ([`super::round_cap`]).
    Without { ours: Vec<usize>, capped: bool },
    /// The model called only our tools: this conversation goes upstream next.
    Again(bytes::Bytes),
}

/// Why a next round brought no answer to stream.
pub(super) enum RoundFailure {
    /// The pass refused it, or it could not be sent.
    Refused(ProxyError),
    /// The upstream answered with an error, read whole.
    Answered(Box<Buffered>),
    /// The client of a live answer went away first: the round was not sent, or its call
    /// was cancelled before the upstream answered.
    ClientGone,
}

impl RoundFailure {
    /// The client's response, when it has had nothing yet.
    pub(super) fn into_response(self) -> Response<Body> {
        match self {
            Self::Refused(error) => error.into_response(),
            Self::Answered(buffered) => (*buffered).verbatim(),
            // Only a live answer watches its client; this response has no reader anyway.
            Self::ClientGone => ProxyError::new(
                Provider::Anthropic,
                ErrorKind::Upstream { timed_out: false },
                "the client went away before the answer".to_owned(),
            )
            .into_response(),
        }
    }

    /// The event that ends a stream the client already reads: the provider's own error
    /// object when the upstream sent one, else the proxy's in the provider's shape; nothing
    /// for a client that is gone.
    pub(super) fn into_event(self, provider: Provider) -> String {
        let buffered = match self {
            Self::Refused(error) => return error.sse_event(),
            Self::Answered(buffered) => buffered,
            Self::ClientGone => return String::new(),
        };
        let upstream_error = serde_json::from_slice::<Value>(&buffered.body)
            .ok()
            .filter(|value| value.get("error").is_some_and(Value::is_object));
        match (upstream_error, provider) {
            (Some(value), Provider::Anthropic) => encode_event(Some("error"), &value.to_string()),
            (Some(value), Provider::OpenAi) => encode_event(None, &value.to_string()),
            // A Responses stream's error events differ from the upstream's JSON error body,
            // so the proxy's own event in that shape is sent.
            (Some(_), Provider::OpenAiResponses) | (None, _) => ProxyError::new(
                provider,
                ErrorKind::Upstream { timed_out: false },
                format!(
                    "the upstream refused the next round of the answer (status {})",
                    buffered.status.as_u16()
                ),
            )
            .sse_event(),
        }
    }
}

impl Call {
    /// Plans `body`, the conversation with the hidden rounds so far, as this call's next
    /// round and sends it. The error is what the client gets instead: the pass's refusal, a
    /// failed send, or an upstream error as the provider sent it. With the `live` client's
    /// sink, a client that goes away before the upstream answers cancels the call: the round
    /// is not sent when it is gone already, and a call in flight gets its ledger row.
    pub(super) async fn next_round(
        &mut self,
        app: &Arc<App>,
        provider: Provider,
        body: bytes::Bytes,
        live: Option<&Sink>,
    ) -> Result<reqwest::Response, RoundFailure> {
        self.planned = plan(
            app,
            provider,
            &self.headers,
            &ChunkedBody::from(body),
            None,
            None,
        )
        .await
        .map_err(RoundFailure::Refused)?;
        self.retried = false;
        self.started = Instant::now();
        let send = send_upstream(
            app,
            provider,
            &self.headers,
            &self.path,
            self.planned.upstream_body.clone(),
        );
        let sent = match live {
            None => send.await,
            Some(sink) if sink.is_gone() => return Err(RoundFailure::ClientGone),
            Some(sink) => tokio::select! {
                biased;
                () = sink.gone() => {
                    CallRecord::start(provider, &self.planned, false, self.started).unanswered(
                        app,
                        None,
                        "client disconnected before the upstream answered".to_owned(),
                    );
                    return Err(RoundFailure::ClientGone);
                }
                sent = send => sent,
            },
        };
        let sent = match sent {
            Ok(response) => Ok(crate::success_error::reclassify(response).await),
            Err(error) => Err(error),
        };
        match sent {
            Ok(response) if response.status().is_success() => Ok(response),
            Ok(response) => {
                let buffered = read_whole(provider, response, self.started).await;
                record(app, provider, self, &buffered);
                Err(RoundFailure::Answered(Box::new(buffered)))
            }
            Err(error) => {
                let refusal = upstream_error(provider, &error);
                CallRecord::start(provider, &self.planned, false, self.started).unanswered(
                    app,
                    Some(refusal.status().as_u16()),
                    refusal.message.clone(),
                );
                Err(RoundFailure::Refused(refusal))
            }
        }
    }
}

/// The client's error when an upstream answer broke off while the proxy read it whole.
pub(super) fn broke_off(provider: Provider, reason: &str) -> Response<Body> {
    tracing::warn!(%reason, "the upstream answer broke off while the proxy read it");
    ProxyError::new(
        provider,
        ErrorKind::Upstream { timed_out: false },
        format!("the upstream answer broke off ({reason})"),
    )
    .into_response()
}

/// Writes the ledger row of one upstream call read whole.
pub(super) fn record(app: &App, provider: Provider, call: &Call, buffered: &Buffered) {
    record_round(
        app,
        provider,
        call,
        buffered.status,
        buffered.usage.clone(),
        buffered.failed.clone(),
        buffered.first_byte_ms,
    );
}

/// Writes the ledger row of one upstream call: its status, what it reported, why it failed
/// if it did, and when its first byte came.
pub(super) fn record_round(
    app: &App,
    provider: Provider,
    call: &Call,
    status: StatusCode,
    usage: CallUsage,
    failed: Option<String>,
    first_byte_ms: Option<u64>,
) {
    CallRecord::start(provider, &call.planned, call.retried, call.started).ended(
        app,
        status.as_u16(),
        usage,
        failed,
        first_byte_ms,
    );
}
