//! The rounds the proxy runs with the model for its own tools, and what the client gets.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::http::{HeaderMap, Response, StatusCode};
use axum::response::IntoResponse;
use mc_core::{ProjectId, SessionId};
use mc_wire::anthropic::{
    self, BlockContent, ContentBlock, MessageRole, MessagesResponse, ToolResultBlock,
};
use mc_wire::sse::encode_event;
use serde_json::Value;

use super::execute::{execute, keep};
use super::live::{Sink, is_stream};
use super::prepare::Prepared;
use super::reply::{Buffered, read_whole};
use super::round_driver::{Next, RoundDriver};
use super::splice::{Splice, client_answer_key};
use super::{is_ours, round_cap};
use crate::app::App;
use crate::clock::elapsed_ms;
use crate::forward::upstream_error;
use crate::ledger::{call_row, record_call, set_usage};
use crate::managed::{plan, send_upstream};
use crate::planned::Planned;
use crate::provider::{ErrorKind, Provider, ProxyError};
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

/// Answers the client from the successful upstream `response` to `call`: runs our tools
/// while the model calls only them, stores what the client will not see, and returns the
/// final answer, or the answer without our calls when the client has calls of its own. A
/// stream goes to the client live ([`super::live_anthropic`]); a JSON answer is read whole.
pub async fn answer(
    app: Arc<App>,
    prepared: Prepared,
    mut call: Call,
    mut response: reqwest::Response,
) -> Response<Body> {
    if is_stream(response.headers()) {
        return super::live_anthropic::answer_live(app, prepared, call, response);
    }
    let mut rounds = Rounds::new(false);
    loop {
        let buffered = read_whole(Provider::Anthropic, response, call.started).await;
        record(&app, Provider::Anthropic, &call, &buffered);
        if let Some(reason) = &buffered.failed {
            return broke_off(Provider::Anthropic, reason);
        }
        let Some(message) = buffered.message() else {
            return buffered.verbatim();
        };
        let body = match rounds.settle(&app, &prepared, &call, &message).await {
            Settled::Final => return buffered.verbatim(),
            Settled::Without { ours, capped } => {
                return buffered.without_blocks(message, &ours, capped);
            }
            Settled::Again(body) => body,
        };
        response = match call.next_round(&app, Provider::Anthropic, body, None).await {
            Ok(response) => response,
            Err(failure) => return failure.into_response(),
        };
    }
}

/// What follows a round the model finished.
pub(super) enum Settled {
    /// No call of ours: the client gets the answer as it is.
    Final,
    /// The client gets the answer without the content blocks at `ours` (indexes of our
    /// calls, run here), as its turn's end; `capped` when the round limit ended it, and the
    /// answer ends with a line saying so ([`super::round_cap`]).
    Without { ours: Vec<usize>, capped: bool },
    /// The model called only our tools: this conversation goes upstream next.
    Again(bytes::Bytes),
}

/// The hidden rounds of one client request on the Anthropic wire so far.
pub(super) struct Rounds {
    hidden: Vec<anthropic::Message>,
    driver: RoundDriver,
    /// Whether the client sees each round as it streams, not only the last one.
    live: bool,
    /// The blocks of the hidden rounds the client saw (live only): they begin the answer
    /// the client gets, and so the message it sends back.
    shown: Vec<ContentBlock>,
}

impl Rounds {
    /// The first round of an answer; `live` when the client sees each round as it
    /// streams.
    pub(super) fn new(live: bool) -> Self {
        Self {
            hidden: Vec::new(),
            driver: RoundDriver::first(),
            live,
            shown: Vec::new(),
        }
    }

    /// How many rounds ran, this one included.
    pub(super) fn count(&self) -> usize {
        self.driver.count()
    }

    /// Decides what follows the round that answered `message`: runs our calls in it, and
    /// stores the exchange the client will not see when the client's answer is settled.
    pub(super) async fn settle(
        &mut self,
        app: &App,
        prepared: &Prepared,
        call: &Call,
        message: &MessagesResponse,
    ) -> Settled {
        let ours: Vec<usize> = (0..message.content.len())
            .filter(|&index| {
                matches!(&message.content[index], ContentBlock::ToolUse(block) if is_ours(&block.name))
            })
            .collect();
        let next = self
            .driver
            .next(ours.len(), tool_calls(&message.content) - ours.len());
        if next == Next::Final {
            if !self.hidden.is_empty() {
                let answer = assistant(message.content.clone());
                // A client that saw blocks of the hidden rounds sends them back in this
                // answer; upstream, they stay in the rounds that wrote them.
                let seen = self.shown_with(message.content.iter());
                let splice = Splice {
                    before: std::mem::take(&mut self.hidden),
                    full_answer: (!self.shown.is_empty()).then_some(answer),
                    client_answer: client_answer_key(&assistant(seen)),
                    results: None,
                };
                keep(app, prepared.point.anchor(), &splice).await;
            }
            return Settled::Final;
        }
        let results = run_tools(
            app,
            &prepared.project,
            &call.planned.session,
            &message.content,
            &ours,
        )
        .await;
        let full = assistant(message.content.clone());
        // Beside the client's calls, or past the bound (a model that calls our tools even
        // when told not to): the client gets the answer without our calls.
        if let Next::HandBack { capped } = next {
            if capped {
                round_cap::warn(self.count(), "anthropic");
            }
            let mut seen = self.shown_with(
                message
                    .content
                    .iter()
                    .enumerate()
                    .filter(|(index, _)| !ours.contains(index))
                    .map(|(_, block)| block),
            );
            if capped {
                seen.push(round_cap::anthropic_block());
            }
            let splice = Splice {
                before: std::mem::take(&mut self.hidden),
                full_answer: Some(full),
                client_answer: client_answer_key(&assistant(seen)),
                results: Some(results),
            };
            keep(app, prepared.point.anchor(), &splice).await;
            return Settled::Without { ours, capped };
        }
        if self.live {
            self.shown.extend(
                message
                    .content
                    .iter()
                    .filter(|block| !matches!(block, ContentBlock::ToolUse(_)))
                    .cloned(),
            );
        }
        self.hidden.push(full);
        self.hidden.push(results);
        // On the last round allowed, the model must answer in text.
        let last = next == Next::Continue { last: true };
        Settled::Again(prepared.next_round(&self.hidden, last))
    }
}

impl Rounds {
    /// The answer as the client gets it: what it saw of the hidden rounds, then `blocks`.
    fn shown_with<'a>(&self, blocks: impl Iterator<Item = &'a ContentBlock>) -> Vec<ContentBlock> {
        self.shown.iter().cloned().chain(blocks.cloned()).collect()
    }
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
        self.planned = plan(app, provider, &self.headers, &body, None)
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
                    let mut row = call_row(provider, &self.planned, false, self.started);
                    row.error = Some("client disconnected before the upstream answered".to_owned());
                    record_call(app, row);
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
                let mut row = call_row(provider, &self.planned, false, self.started);
                row.status = refusal.status().as_u16();
                row.error = Some(refusal.message.clone());
                record_call(app, row);
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

fn assistant(content: Vec<ContentBlock>) -> anthropic::Message {
    anthropic::Message::new(MessageRole::Assistant, BlockContent::Blocks(content))
}

fn tool_calls(content: &[ContentBlock]) -> usize {
    content
        .iter()
        .filter(|block| matches!(block, ContentBlock::ToolUse(_)))
        .count()
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
    let mut row = call_row(provider, &call.planned, call.retried, call.started);
    row.status = status.as_u16();
    set_usage(&mut row, usage);
    row.error = failed;
    row.first_byte_ms = first_byte_ms;
    row.total_ms = elapsed_ms(call.started);
    record_call(app, row);
}

/// Runs our calls among `content` (at `ours`); the user turn of their results, in call
/// order.
async fn run_tools(
    app: &App,
    project: &Option<ProjectId>,
    session: &Option<SessionId>,
    content: &[ContentBlock],
    ours: &[usize],
) -> anthropic::Message {
    let calls: Vec<(String, String, Value)> = ours
        .iter()
        .filter_map(|&index| match &content[index] {
            ContentBlock::ToolUse(block) => {
                Some((block.id.clone(), block.name.clone(), block.input.clone()))
            }
            _ => None,
        })
        .collect();
    let answers = execute(app, project, session, &calls).await;
    let blocks = calls
        .into_iter()
        .zip(answers)
        .map(|((id, _, _), answer)| {
            ContentBlock::ToolResult(ToolResultBlock::new(
                id,
                Some(BlockContent::Text(answer.text)),
                answer.is_error,
            ))
        })
        .collect();
    anthropic::Message::new(MessageRole::User, BlockContent::Blocks(blocks))
}
