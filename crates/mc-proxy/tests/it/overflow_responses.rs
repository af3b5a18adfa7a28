//! A Responses backend that refuses an overflow inside a `200` stream (`response.failed`,
//! code `context_length_exceeded`) gets the same single retry as an HTTP 400 when nothing of
//! the stream reached the client yet; once output has reached it, the failure passes through
//! as the provider sent it.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Response};
use mc_sim::script::Script;
use mc_sim::server::{Responder, SimConfig, SimServer};
use serde_json::{Value, json};

use crate::overflow::file_text;
use crate::support::{Proxy, QuarterBytes, Upstream, send, sse_events, sse_response, tap};

/// The simulator's window: the session below is about half again as large.
const WINDOW_TOKENS: u64 = 20_000;

/// A Codex-like conversation: `rounds` distinct file reads of `lines` lines each.
fn long_input(rounds: usize, lines: usize) -> Vec<Value> {
    let mut input = vec![
        json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are a careful coding agent."}]}),
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Read every file and summarise."}]}),
    ];
    for round in 0..rounds {
        let call_id = format!("call_read_{round}");
        input.push(
            json!({"type": "function_call", "call_id": call_id, "name": "exec_command",
            "arguments": format!("{{\"cmd\":\"cat src/file_{round}.rs\"}}")}),
        );
        input.push(json!({"type": "function_call_output", "call_id": call_id,
            "output": file_text(round, lines)}));
    }
    input
}

async fn post_responses(proxy: &Proxy, input: &[Value]) -> crate::support::Reply {
    let body = json!({
        "model": "gpt-5",
        "stream": true,
        "store": false,
        "input": input,
        "tools": [{"type": "function", "name": "exec_command", "strict": false, "parameters": {"type": "object"}}],
        "prompt_cache_key": "0199c0de-overflow-thread",
    });
    send(
        Method::POST,
        &proxy.url("/v1/responses"),
        &[
            ("content-type", "application/json"),
            ("authorization", "Bearer sk-openai-overflow"),
        ],
        body.to_string(),
    )
    .await
}

fn kinds(events: &[(Option<String>, Value)]) -> Vec<String> {
    events
        .iter()
        .filter_map(|(_, data)| data["type"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn an_overflow_failed_before_any_output_is_retried_smaller() {
    let script =
        json!({"turns": [{"content": [{"type": "text", "text": "Summary: sixty files."}]}]});
    let script = Script::parse(&script.to_string(), "overflow test").unwrap();
    let config = SimConfig::new(Responder::Script(script))
        .with_counter(Arc::new(QuarterBytes))
        .with_window(WINDOW_TOKENS)
        .with_overflow_in_stream();
    let sim = SimServer::bind("127.0.0.1:0".parse().unwrap(), config)
        .await
        .unwrap();
    let (upstream, relayed) = tap(sim.local_addr()).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let input = long_input(60, 60);

    let reply = post_responses(&proxy, &input).await;

    assert_eq!(reply.status, 200, "{}", reply.text());
    let ledger = sim.ledger();
    assert_eq!(ledger.len(), 2, "{ledger:?}");
    assert!(ledger[0].prompt_tokens > WINDOW_TOKENS, "{ledger:?}");
    assert_eq!(ledger[1].status, 200);
    assert!(ledger[1].prompt_tokens <= WINDOW_TOKENS, "{ledger:?}");
    // The first answer was the failed stream; the client got the second, byte for byte.
    let relayed = relayed.lock().unwrap().clone();
    assert_eq!(relayed[0].0, 200);
    assert!(kinds(&sse_events(&relayed[0].1)).contains(&"response.failed".to_owned()));
    assert_eq!(reply.body, relayed[1].1);
    let events = sse_events(&reply.body);
    let seen_kinds = kinds(&events);
    assert_eq!(
        seen_kinds.first().map(String::as_str),
        Some("response.created")
    );
    assert_eq!(
        seen_kinds.last().map(String::as_str),
        Some("response.completed")
    );
    assert!(!seen_kinds.contains(&"response.failed".to_owned()));
    assert!(
        events
            .iter()
            .any(|(_, data)| data["delta"] == "Summary: sixty files.")
    );
    // The retry is the same conversation, smaller.
    let seen = upstream.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen[1].body.len() < seen[0].body.len() * 3 / 4);
    let ids = proxy.session_ids();
    assert_eq!(ids.len(), 1);
    proxy.shutdown().await;
    sim.shutdown().await.unwrap();
}

/// A stream that says `Partial` and then fails as an overflow.
fn failed_after_output() -> Response<Body> {
    let events = [
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}}),
        json!({"type": "response.output_text.delta", "sequence_number": 1, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Partial"}),
        json!({"type": "response.failed", "sequence_number": 2, "response": {"id": "resp_1", "object": "response", "status": "failed", "output": [],
            "error": {"code": "context_length_exceeded", "message": "This model's maximum context length is 20000 tokens. However, your messages resulted in 30000 tokens."}}}),
    ];
    let body: String = events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap()
            )
        })
        .collect();
    sse_response(body)
}

#[tokio::test]
async fn an_overflow_failed_after_output_passes_through_untouched() {
    let upstream = Upstream::replying(|_, _| failed_after_output()).await;
    let proxy = Proxy::start(&upstream.url()).await;

    let reply = post_responses(&proxy, &long_input(4, 10)).await;

    assert_eq!(reply.status, 200);
    let seen: Vec<(String, String)> = upstream
        .seen()
        .iter()
        .map(|seen| {
            (
                seen.uri.clone(),
                String::from_utf8_lossy(&seen.body)
                    .chars()
                    .take(400)
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        seen.len(),
        1,
        "no retry once output reached the client: {seen:#?}"
    );
    let expected = axum::body::to_bytes(failed_after_output().into_body(), usize::MAX)
        .await
        .unwrap();
    assert_eq!(reply.body, expected);
    proxy.shutdown().await;
}
