//! The rounds the proxy runs with the model for its own tools, and what the client gets.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::http::{HeaderMap, Response};
use axum::response::IntoResponse;
use mc_core::{ProjectId, SessionId};
use mc_wire::anthropic::{self, BlockContent, ContentBlock, MessageRole, ToolResultBlock};
use serde_json::{Value, json};

use super::execute::{execute, keep};
use super::prepare::Prepared;
use super::reply::{Buffered, read_whole};
use super::splice::{Splice, message_hash};
use super::{MAX_ROUNDS, is_ours};
use crate::app::App;
use crate::clock::elapsed_ms;
use crate::forward::upstream_error;
use crate::ledger::{call_row, record_call, set_usage};
use crate::managed::{plan, send_upstream};
use crate::pass_run::Planned;
use crate::provider::{ErrorKind, Provider, ProxyError};

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
/// final answer, or the answer without our calls when the client has calls of its own.
pub async fn answer(
    app: Arc<App>,
    prepared: Prepared,
    mut call: Call,
    mut response: reqwest::Response,
) -> Response<Body> {
    let mut hidden: Vec<anthropic::Message> = Vec::new();
    let mut rounds = 1;
    loop {
        let buffered = read_whole(Provider::Anthropic, response, call.started).await;
        record(&app, Provider::Anthropic, &call, &buffered);
        if let Some(reason) = &buffered.failed {
            return broke_off(Provider::Anthropic, reason);
        }
        let Some(message) = buffered.message() else {
            return buffered.verbatim();
        };
        let ours: Vec<usize> = (0..message.content.len())
            .filter(|&index| {
                matches!(&message.content[index], ContentBlock::ToolUse(block) if is_ours(&block.name))
            })
            .collect();
        if ours.is_empty() {
            if !hidden.is_empty() {
                let answer = assistant(message.content.clone());
                let splice = Splice {
                    before: hidden,
                    full_answer: None,
                    client_answer: message_hash(&answer).to_string(),
                    results: None,
                };
                keep(&app, prepared.point.anchor(), &splice).await;
            }
            return buffered.verbatim();
        }
        let results = run_tools(
            &app,
            &prepared.project,
            &call.planned.session,
            &message.content,
            &ours,
        )
        .await;
        let full = assistant(message.content.clone());
        // Beside the client's calls, or past the bound (a model that calls our tools even
        // when told not to): the client gets the answer without our calls.
        if ours.len() < tool_calls(&message.content) || rounds >= MAX_ROUNDS {
            let mut index = 0;
            let seen: Vec<ContentBlock> = message
                .content
                .iter()
                .filter(|_| {
                    index += 1;
                    !ours.contains(&(index - 1))
                })
                .cloned()
                .collect();
            let splice = Splice {
                before: hidden,
                full_answer: Some(full),
                client_answer: message_hash(&assistant(seen)).to_string(),
                results: Some(results),
            };
            keep(&app, prepared.point.anchor(), &splice).await;
            return buffered.without_blocks(message, &ours);
        }
        hidden.push(full);
        hidden.push(results);
        rounds += 1;
        let mut next = prepared.request.clone();
        next.messages.extend(hidden.iter().cloned());
        if rounds >= MAX_ROUNDS {
            // The last round allowed: the model must answer in text now.
            next.rest
                .insert("tool_choice".to_owned(), json!({"type": "none"}));
        }
        let body = bytes::Bytes::from(next.encode());
        response = match call.next_round(&app, Provider::Anthropic, body).await {
            Ok(response) => response,
            Err(refused) => return refused,
        };
    }
}

impl Call {
    /// Plans `body`, the conversation with the hidden rounds so far, as this call's next
    /// round and sends it. The error is what the client gets instead: the pass's refusal, a
    /// failed send, or an upstream error as the provider sent it.
    pub(super) async fn next_round(
        &mut self,
        app: &Arc<App>,
        provider: Provider,
        body: bytes::Bytes,
    ) -> Result<reqwest::Response, Response<Body>> {
        self.planned = plan(app, provider, &self.headers, &body, None)
            .await
            .map_err(IntoResponse::into_response)?;
        self.retried = false;
        self.started = Instant::now();
        let sent = send_upstream(
            app,
            provider,
            &self.headers,
            &self.path,
            self.planned.upstream_body.clone(),
        )
        .await;
        match sent {
            Ok(response) if response.status().is_success() => Ok(response),
            Ok(response) => {
                let buffered = read_whole(provider, response, self.started).await;
                record(app, provider, self, &buffered);
                Err(buffered.verbatim())
            }
            Err(error) => {
                let refusal = upstream_error(provider, &error);
                let mut row = call_row(provider, &self.planned, false, self.started);
                row.status = refusal.status().as_u16();
                row.error = Some(refusal.message.clone());
                record_call(app, row);
                Err(refusal.into_response())
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

/// Writes the ledger row of one upstream call.
pub(super) fn record(app: &App, provider: Provider, call: &Call, buffered: &Buffered) {
    let mut row = call_row(provider, &call.planned, call.retried, call.started);
    row.status = buffered.status.as_u16();
    set_usage(&mut row, buffered.usage.clone());
    row.error.clone_from(&buffered.failed);
    row.first_byte_ms = buffered.first_byte_ms;
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
