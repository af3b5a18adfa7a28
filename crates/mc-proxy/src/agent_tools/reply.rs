//! An upstream answer read whole, and what the client gets of it.
//!
//! A JSON answer (a client that did not ask for a stream) and an upstream error body are
//! read whole: the proxy cannot know whether an answer calls its tools before it ends, and a
//! client must never see a call it cannot run. The client then gets the provider's bytes as
//! they were, or, when some blocks were ours, the same answer with those blocks removed. A
//! streamed answer goes to the client live instead ([`super::live_anthropic`],
//! [`super::live_chat`]).

use std::time::Instant;

use axum::body::Body;
use axum::http::{HeaderMap, Response, StatusCode, header};
use bytes::Bytes;
use futures_util::StreamExt;
use mc_wire::anthropic::{ContentBlock, MessagesResponse};
use serde_json::Value;

use crate::clock::elapsed_ms;
use crate::headers::client_response_headers;
use crate::provider::Provider;
use crate::usage::{CallUsage, UsageObserver};

/// The stop reason of an answer that ends the model's turn.
const END_TURN: &str = "end_turn";

/// Largest answer buffered; a larger one ends the call with an error (no model answer
/// comes near it).
const MAX_ANSWER_BYTES: usize = 64 << 20;

/// An upstream answer, whole.
pub struct Buffered {
    /// The upstream status.
    pub status: StatusCode,
    /// The headers the client may see.
    pub headers: HeaderMap,
    /// The body.
    pub body: Bytes,
    /// Why the body could not be read to its end, if it could not.
    pub failed: Option<String>,
    /// What it reported.
    pub usage: CallUsage,
    /// Milliseconds from the call's start to the first body byte.
    pub first_byte_ms: Option<u64>,
}

/// Reads `response` to its end.
pub async fn read_whole(
    provider: Provider,
    response: reqwest::Response,
    started: Instant,
) -> Buffered {
    let status = StatusCode::from_u16(response.status().as_u16()).unwrap_or(StatusCode::OK);
    let headers = client_response_headers(response.headers());
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let mut observer = UsageObserver::new(provider, content_type.as_deref());
    let mut body = Vec::new();
    let mut failed = None;
    let mut first_byte_ms = None;
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(chunk) => {
                first_byte_ms.get_or_insert_with(|| elapsed_ms(started));
                if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                    failed = Some(format!(
                        "the answer is larger than {MAX_ANSWER_BYTES} bytes"
                    ));
                    break;
                }
                observer.push(&chunk);
                body.extend_from_slice(&chunk);
            }
            Err(error) => {
                // The transport's message may quote the upstream URL with its query.
                failed = Some(mc_core::redact_credentials(&error.to_string()));
                break;
            }
        }
    }
    let usage = observer.finish();
    if failed.is_none() {
        failed.clone_from(&usage.stream_error);
    }
    Buffered {
        status,
        headers,
        body: Bytes::from(body),
        failed,
        usage,
        first_byte_ms,
    }
}

impl Buffered {
    /// The message the answer describes, when it parses as a whole one.
    pub fn message(&self) -> Option<MessagesResponse> {
        MessagesResponse::decode(&self.body, usize::MAX).ok()
    }

    /// The answer as the provider sent it.
    pub fn verbatim(self) -> Response<Body> {
        let body = self.body.clone();
        self.respond(body)
    }

    /// The answer without the content blocks at `dropped` (indexes, ascending), whose
    /// message is `message`; with the round limit's line at its end when `capped`.
    ///
    /// When no call is left for the client (the bound stopped the rounds), the answer says
    /// it ended its turn: a client told `tool_use` with no call to run would wait on one.
    pub fn without_blocks(
        self,
        mut message: MessagesResponse,
        dropped: &[usize],
        capped: bool,
    ) -> Response<Body> {
        let mut index = 0;
        message.content.retain(|_| {
            index += 1;
            !dropped.contains(&(index - 1))
        });
        if capped {
            message
                .content
                .push(mc_agent_tools::round_cap::anthropic_block());
        }
        let calls_left = message
            .content
            .iter()
            .any(|block| matches!(block, ContentBlock::ToolUse(_)));
        if !calls_left {
            message
                .rest
                .insert("stop_reason".to_owned(), Value::from(END_TURN));
        }
        self.respond(Bytes::from(message.encode()))
    }

    /// The client's response: this answer's status and headers around `body`.
    pub fn respond(self, body: Bytes) -> Response<Body> {
        let mut out = Response::new(Body::from(body));
        *out.status_mut() = self.status;
        *out.headers_mut() = self.headers;
        out
    }
}
