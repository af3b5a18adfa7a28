//! Upstream faults, one per test, each injected `REPEATS` times into a three-turn streamed
//! session, the client resending a failed turn as agents do. For every fault:
//!
//! - the client sees a faithful error: the provider's status, body and `retry-after`
//!   untouched, or (once a stream has started) the last whole event and then an `error`
//!   event, never one spliced into half an event;
//! - nothing is corrupted or lost: the resent request goes up byte-identical to the failed
//!   one, and every upstream request and every stored message equal those of a run in
//!   which the fault never happened (a broken stream reports a near-full prompt first, so a
//!   proxy that planned with it would plan the next request differently);
//! - the ledger records the failure with its status and what went wrong.

use std::time::Duration;

use axum::body::Bytes;
use axum::http::Method;
use mc_core::ContentHash;
use mc_store::CallRow;
use serde_json::{Value, json};

use crate::fault_upstream::{
    Fault, FaultUpstream, RETRY_AFTER, WINDOW_TOKENS, answer_text, error_body,
};
use crate::overflow::long_session;
use crate::support::{
    Proxy, Reply, anthropic_request, assistant, send, settings, sse_events, user,
};

/// How many times each fault is injected (each time into a fresh proxy and store).
const REPEATS: usize = 3;

const SESSION: &str = "upstream-faults-3c1e";

/// The proxy's idle timeout in these tests: the stalled stream outlasts it, the trickle's
/// gaps do not.
const IDLE_TIMEOUT: Duration = Duration::from_millis(500);

/// The client's request for turn `turn` (from 1): fourteen file reads (droppable once the
/// prompt nears the window, kept below it), then each earlier turn's question and the
/// answer the upstream gave it.
fn turn_request(turn: usize) -> Value {
    let mut messages = long_session(14, 60);
    messages.push(assistant("I have read them all."));
    for i in 1..=turn {
        messages.push(user(&format!(
            "Question {i}: what does module {i} of the parser do?"
        )));
        if i < turn {
            let answer = answer_text(messages.len());
            messages
                .push(json!({"role": "assistant", "content": [{"type": "text", "text": answer}]}));
        }
    }
    let mut body = anthropic_request(&messages);
    body["stream"] = json!(true);
    body
}

/// What one run of the session left behind.
struct Run {
    /// Every request body the upstream received, in order.
    upstream: Vec<Bytes>,
    /// Every reply the client got, in order.
    replies: Vec<Reply>,
    /// The ledger, oldest first.
    calls: Vec<CallRow>,
    /// The stored log: ordinal, content hash and chain link of each message.
    stored: Vec<(u64, ContentHash, ContentHash)>,
}

/// Drives three turns against an upstream following `plan`, resending a turn whose call
/// failed (a trickled call succeeds and is not resent).
async fn drive(plan: &[Fault]) -> Run {
    let upstream = FaultUpstream::start(plan.to_vec()).await;
    let mut quick = settings(&upstream.url());
    quick.upstream_idle_timeout = IDLE_TIMEOUT;
    quick.context_window = Some(WINDOW_TOKENS);
    let proxy = Proxy::start_with(quick).await;
    let mut replies = Vec::new();
    for turn in 1..=3 {
        loop {
            let fault = plan.get(replies.len()).copied().unwrap_or(Fault::None);
            let reply = send(
                Method::POST,
                &proxy.url("/v1/messages"),
                &[
                    ("content-type", "application/json"),
                    ("x-api-key", "sk-ant-faults"),
                    ("x-magic-context-session", SESSION),
                ],
                turn_request(turn).to_string(),
            )
            .await;
            replies.push(reply);
            if matches!(fault, Fault::None | Fault::Trickle) {
                break;
            }
        }
    }
    let calls = proxy.calls(SESSION, replies.len()).await;
    let stored = proxy
        .messages(SESSION)
        .into_iter()
        .map(|message| (message.ordinal, message.hash, message.chain))
        .collect();
    let upstream = upstream.seen();
    proxy.shutdown().await;
    Run {
        upstream,
        replies,
        calls,
        stored,
    }
}

/// What the ledger row of a call failed by `fault` holds: its status and error.
fn expected_row(fault: Fault) -> (u16, Option<String>) {
    if let Some((status, body)) = error_body(fault) {
        let error = body["error"].clone();
        let text = format!(
            "{}: {}",
            error["type"].as_str().unwrap(),
            error["message"].as_str().unwrap()
        );
        return (status, Some(text));
    }
    let error = match fault {
        Fault::None | Fault::Trickle => None,
        Fault::ResetMidStream | Fault::ResetMidEvent | Fault::Stall => {
            Some("upstream failed mid-body")
        }
        Fault::CutMidEvent => Some("upstream stream ended mid-event"),
        Fault::RateLimited | Fault::ServerError | Fault::Overloaded => unreachable!(),
    };
    (200, error.map(str::to_owned))
}

/// The client got the provider's error as sent, or the stream's whole events up to the
/// break and then an `error` event.
fn assert_faithful(fault: Fault, reply: &Reply, clean: &Reply) {
    if let Some((status, body)) = error_body(fault) {
        assert_eq!(reply.status.as_u16(), status, "{fault:?}");
        assert_eq!(
            reply.json(),
            body,
            "{fault:?}: the provider's body was altered"
        );
        if fault == Fault::RateLimited {
            assert_eq!(reply.headers["retry-after"], RETRY_AFTER);
            assert_eq!(reply.headers["anthropic-ratelimit-requests-remaining"], "0");
        }
        return;
    }
    assert_eq!(reply.status, 200, "{fault:?}");
    if fault == Fault::Trickle {
        assert_eq!(reply.body, clean.body, "the trickled stream was altered");
        return;
    }
    // Every event parses (none has an error spliced into it), the first three are the
    // upstream's own, and the last is the proxy's error event.
    let events = sse_events(&reply.body);
    let clean_events = sse_events(&clean.body);
    assert_eq!(events.len(), 4, "{fault:?}: {}", reply.text());
    for (index, (name, data)) in events[..3].iter().enumerate() {
        assert_eq!(name, &clean_events[index].0, "{fault:?}");
        assert_eq!(data["type"], clean_events[index].1["type"], "{fault:?}");
    }
    assert_eq!(events[3].0.as_deref(), Some("error"), "{fault:?}");
    assert_eq!(events[3].1["error"]["type"], "api_error", "{fault:?}");
}

/// Injects `fault` into turn 2, `REPEATS` times, and checks each run against a run
/// without it.
async fn survives(fault: Fault) {
    let clean = drive(&[]).await;
    assert_eq!(clean.upstream.len(), 3);
    assert!(
        clean
            .calls
            .iter()
            .all(|call| call.error.is_none() && call.status == 200)
    );
    let failed = 1;
    for repeat in 0..REPEATS {
        let run = drive(&[Fault::None, fault]).await;
        let context = format!("{fault:?}, repeat {repeat}");
        let resent = usize::from(!matches!(fault, Fault::Trickle));
        assert_eq!(run.upstream.len(), 3 + resent, "{context}");

        assert_faithful(fault, &run.replies[failed], &clean.replies[failed]);

        // The resent request is byte-identical to the failed one, and the session goes
        // on exactly as if the failure never happened.
        let mut upstream = run.upstream.clone();
        if resent == 1 {
            assert_eq!(upstream[failed], upstream[failed + 1], "{context}");
            upstream.remove(failed);
        }
        for (index, (got, want)) in upstream.iter().zip(&clean.upstream).enumerate() {
            assert!(
                got == want,
                "{context}: upstream request {index} differs from the run without the fault:\n{}\n---\n{}",
                String::from_utf8_lossy(got),
                String::from_utf8_lossy(want)
            );
        }
        assert_eq!(
            run.stored, clean.stored,
            "{context}: the stored log differs"
        );
        let last = run.replies.last().unwrap();
        assert_eq!(last.body, clean.replies.last().unwrap().body, "{context}");

        // The ledger has one row per call; only the failed one records an error.
        let rows: Vec<(u16, Option<String>)> = run
            .calls
            .iter()
            .map(|call| (call.status, call.error.clone()))
            .collect();
        let mut expected = vec![(200, None); run.upstream.len()];
        expected[failed] = expected_row(fault);
        assert_eq!(rows, expected, "{context}");
    }
}

#[tokio::test]
async fn a_connection_reset_mid_stream() {
    survives(Fault::ResetMidStream).await;
}

#[tokio::test]
async fn a_connection_reset_mid_event() {
    survives(Fault::ResetMidEvent).await;
}

#[tokio::test]
async fn a_body_cut_mid_event() {
    survives(Fault::CutMidEvent).await;
}

#[tokio::test]
async fn a_stream_that_stalls() {
    survives(Fault::Stall).await;
}

#[tokio::test]
async fn a_slow_trickle() {
    survives(Fault::Trickle).await;
}

#[tokio::test]
async fn a_429_with_retry_after() {
    survives(Fault::RateLimited).await;
}

#[tokio::test]
async fn a_500() {
    survives(Fault::ServerError).await;
}

#[tokio::test]
async fn a_529_overloaded() {
    survives(Fault::Overloaded).await;
}
