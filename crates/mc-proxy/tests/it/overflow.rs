//! A context overflow from the provider is retried once with an emergency plan before the
//! client sees anything (DESIGN §4 step 9): success when the smaller request fits, else the
//! provider's own error; never more than two upstream calls. When the engine has nothing
//! left to drop, it refuses the retry itself (a proven limit, nothing to fold) and only one
//! call goes up.

use axum::http::Method;
use serde_json::{Value, json};

use crate::support::{MODEL, Proxy, Seen, Upstream, json_response, send, sim, sse_events, tap};

/// A long tool-heavy session: `rounds` distinct file reads of `lines` lines (about 10
/// tokens a line). Reads under 800 tokens are not stale yet, so only an emergency drops
/// them; larger old ones are dropped by the first pass already.
pub fn long_session(rounds: usize, lines: usize) -> Vec<Value> {
    let mut messages = vec![json!({"role": "user", "content": "Read every file and summarise."})];
    for round in 0..rounds {
        let id = format!("toolu_read_{round}");
        messages.push(json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": "Read", "input": {"path": format!("src/file_{round}.rs")}}]}));
        let content = file_text(round, lines);
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": content}]}));
    }
    messages
}

/// `lines` lines of text unlike any other file's (the duplicate lane would drop near-copies).
pub(crate) fn file_text(file: usize, lines: usize) -> String {
    const WORDS: [&str; 16] = [
        "parse", "token", "buffer", "cache", "store", "render", "plan", "drop", "fold", "stream",
        "header", "session", "ledger", "window", "branch", "engine",
    ];
    let mut state = 0x9E37_79B9_7F4A_7C15_u64 ^ (file as u64 + 1).wrapping_mul(0x0100_0000_01B3);
    let mut text = String::new();
    for line in 0..lines {
        text.push_str(&format!("{line:3}:"));
        for _ in 0..6 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            text.push(' ');
            text.push_str(WORDS[(state >> 60) as usize]);
        }
        text.push('\n');
    }
    text
}

fn request(messages: &[Value], stream: bool) -> Value {
    json!({
        "model": MODEL,
        "max_tokens": 1024,
        "stream": stream,
        "system": "You are a careful coding agent.",
        "messages": messages,
    })
}

fn overflow_body(prompt: u64, limit: u64) -> Value {
    json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": format!("prompt is too long: {prompt} tokens > {limit} maximum")}})
}

async fn post_messages(proxy: &Proxy, body: &Value) -> crate::support::Reply {
    send(
        Method::POST,
        &proxy.url("/v1/messages"),
        &[
            ("content-type", "application/json"),
            ("x-api-key", "sk-ant-overflow"),
        ],
        body.to_string(),
    )
    .await
}

#[tokio::test]
async fn an_overflow_is_retried_once_and_the_smaller_request_succeeds() {
    let script =
        json!({"turns": [{"content": [{"type": "text", "text": "Summary: sixty files."}]}]});
    let sim = sim(&script, Some(20_000)).await;
    let (upstream, relayed) = tap(sim.local_addr()).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let messages = long_session(60, 60);

    let reply = post_messages(&proxy, &request(&messages, true)).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let ledger = sim.ledger();
    assert_eq!(ledger.len(), 2, "{ledger:?}");
    assert_eq!(ledger[0].status, 400);
    assert!(ledger[0].prompt_tokens > 20_000, "{ledger:?}");
    assert_eq!(ledger[1].status, 200);
    assert!(ledger[1].prompt_tokens <= 20_000, "{ledger:?}");
    // The client got the successful answer, byte for byte, and never the overflow.
    let relayed = relayed.lock().unwrap().clone();
    assert_eq!(relayed[0].0, 400);
    assert_eq!(reply.body, relayed[1].1);
    let events = sse_events(&reply.body);
    assert!(
        events
            .iter()
            .any(|(_, data)| data["delta"]["text"] == "Summary: sixty files.")
    );

    // The retry is the same conversation, smaller: tool output dropped, pairs kept.
    let seen = upstream.seen();
    assert_eq!(seen.len(), 2);
    let (first, retry) = (seen[0].json(), seen[1].json());
    assert!(seen[1].body.len() < seen[0].body.len() * 3 / 4);
    assert_eq!(
        first["messages"].as_array().unwrap().len(),
        retry["messages"].as_array().unwrap().len()
    );
    assert!(crate::support::cache_markers(&retry) <= 4);
    let ids = proxy.session_ids();
    assert_eq!(ids.len(), 1);
    assert_eq!(proxy.messages(&ids[0]).len(), messages.len());
}

#[tokio::test]
async fn an_overflow_the_retry_cannot_fix_returns_the_providers_error() {
    let upstream = Upstream::replying(|_, index| {
        // The provider refuses whatever it gets: the retry fits every limit the proxy knows
        // of, so it is sent, and the provider's answer is what the client sees.
        let mut response = json_response(400, &overflow_body(25_000, 20_000 + index as u64));
        response.headers_mut().insert(
            "request-id",
            format!("req_overflow_{index}").parse().unwrap(),
        );
        response
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    let reply = post_messages(&proxy, &request(&long_session(60, 60), false)).await;
    let seen = upstream.seen();
    assert_eq!(seen.len(), 2, "one call and one retry");
    assert!(seen[1].body.len() < seen[0].body.len());
    assert_eq!(reply.status, 400);
    // The second answer, as the provider sent it.
    assert_eq!(reply.json(), overflow_body(25_000, 20_001));
    assert_eq!(reply.headers["request-id"], "req_overflow_1");
}

/// A Chat conversation of `rounds` file reads of 100 lines each.
fn chat_reads(rounds: usize) -> Vec<Value> {
    let mut messages = vec![
        json!({"role": "system", "content": "Be brief."}),
        json!({"role": "user", "content": "Read every file."}),
    ];
    for round in 0..rounds {
        let id = format!("call_{round}");
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "read", "arguments": format!("{{\"path\":\"f{round}\"}}")}}]}));
        let content: String = (0..100)
            .map(|line| format!("file {round} line {line}\n"))
            .collect();
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
    }
    messages
}

/// Posts `body` to the Chat path, checks the client got the answer that fits, and returns
/// the two requests the upstream saw (the refused one and the retry).
async fn post_fitting_chat(proxy: &Proxy, upstream: &Upstream, body: &Value) -> Vec<Seen> {
    let reply = send(
        Method::POST,
        &proxy.url("/v1/chat/completions"),
        &[("content-type", "application/json")],
        body.to_string(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["choices"][0]["message"]["content"], "fits now");
    let seen = upstream.seen();
    assert_eq!(seen.len(), 2);
    seen
}

#[tokio::test]
async fn an_openai_context_length_error_is_retried_too() {
    let upstream = Upstream::replying(|_, index| {
        if index == 0 {
            json_response(400, &json!({"error": {
                "message": "This model's maximum context length is 30,000 tokens. However, your messages resulted in 41,000 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}))
        } else {
            json_response(200, &json!({"id": "chatcmpl-ok", "object": "chat.completion", "model": "gpt-4o",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "fits now"}, "finish_reason": "stop"}]}))
        }
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    let messages = chat_reads(40);
    let body = json!({"model": "gpt-4o", "messages": messages});
    let seen = post_fitting_chat(&proxy, &upstream, &body).await;
    assert!(seen[1].body.len() < seen[0].body.len() * 3 / 4);
}

/// A backend that states no figures (a local server's "context length exceeded") still
/// gets a smaller retry, not the same bytes again: the refused request bounds the window.
#[tokio::test]
async fn an_overflow_stated_without_figures_is_retried_smaller() {
    let upstream = Upstream::replying(|_, index| {
        if index == 0 {
            json_response(400, &json!({"error": {
                "message": "Input context length exceeded for this model.",
                "type": "invalid_request_error"}}))
        } else {
            json_response(200, &json!({"id": "chatcmpl-ok", "object": "chat.completion", "model": "local-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "fits now"}, "finish_reason": "stop"}]}))
        }
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    let messages = chat_reads(40);
    let body = json!({"model": "local-model", "messages": messages});
    let seen = post_fitting_chat(&proxy, &upstream, &body).await;
    assert!(
        seen[1].body.len() < seen[0].body.len() * 9 / 10,
        "retry {} bytes after {}",
        seen[1].body.len(),
        seen[0].body.len()
    );
}

#[tokio::test]
async fn other_client_errors_are_not_retried() {
    let error = json!({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: must be positive"}});
    let answer = error.clone();
    let upstream = Upstream::replying(move |_, _| json_response(400, &answer)).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let reply = post_messages(&proxy, &request(&long_session(3, 10), false)).await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json(), error);
    assert_eq!(upstream.seen().len(), 1);
}

#[tokio::test]
async fn with_nothing_left_to_drop_the_retry_is_refused_as_too_long() {
    let upstream =
        Upstream::replying(|_, _| json_response(400, &overflow_body(90_000, 8_000))).await;
    let proxy = Proxy::start(&upstream.url()).await;
    // Large reads: the first pass already dropped every old one it may.
    let reply = post_messages(&proxy, &request(&long_session(40, 100), false)).await;
    assert_eq!(
        upstream.seen().len(),
        1,
        "a retry that cannot shrink is not sent"
    );
    assert_eq!(reply.status, 400);
    let body = reply.json();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    // Claude Code compacts on this phrase.
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("prompt is too long"), "{message}");
    assert!(
        message.contains("under the 8000-token limit the provider proved"),
        "{message}"
    );
}

#[tokio::test]
async fn an_input_plus_max_tokens_overflow_is_retried_with_room_that_fits() {
    // Anthropic counts `max_tokens` against the window. The provider here counts a third of
    // the body's bytes as tokens and leaves 10K of room: the retry asks for no more than the
    // window minus the input bound (the smaller of the provider's count of the first request
    // and a third of the retry's bytes).
    let upstream = Upstream::replying(|seen, index| {
        let input = seen.body.len() as u64 / 3;
        if index == 0 {
            let message = format!(
                "input length and `max_tokens` exceed context limit: {input} + 64000 > {}, decrease input length or `max_tokens` and try again",
                input + 10_000
            );
            json_response(
                400,
                &json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}}),
            )
        } else {
            json_response(200, &json!({"id": "msg_1", "type": "message", "role": "assistant",
                "model": MODEL, "content": [{"type": "text", "text": "fits"}],
                "stop_reason": "end_turn", "stop_sequence": null,
                "usage": {"input_tokens": 10, "output_tokens": 2}}))
        }
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    let mut body = request(&long_session(60, 60), false);
    body["max_tokens"] = json!(64_000);
    let reply = post_messages(&proxy, &body).await;
    let seen = upstream.seen();
    assert_eq!(seen.len(), 2, "one call and one retry");
    assert_eq!(reply.status, 200);
    assert_eq!(
        seen[0].json()["max_tokens"],
        64_000,
        "the first call goes as asked"
    );
    let counted = seen[0].body.len() as u64 / 3;
    let window = counted + 10_000;
    let bound = (seen[1].body.len() as u64).div_ceil(3).min(counted);
    assert_eq!(seen[1].json()["max_tokens"], window - bound);
}

#[tokio::test]
async fn near_a_known_window_max_tokens_is_lowered_before_anything_is_refused() {
    // The proxy knows the window (here 30K tokens) and the request asks for 32K output
    // tokens: input + max_tokens would not fit, so the request goes up asking for the room
    // left, computed from the rendered body's size (a third of its bytes, an upper bound).
    let upstream = Upstream::replying(|_, _| {
        json_response(
            200,
            &json!({"id": "msg_1", "type": "message", "role": "assistant",
            "model": MODEL, "content": [{"type": "text", "text": "fits"}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 2}}),
        )
    })
    .await;
    let mut settings = crate::support::settings(&upstream.url());
    settings.context_window = Some(30_000);
    let proxy = Proxy::start_with(settings).await;
    let mut body = request(&long_session(8, 60), false);
    body["max_tokens"] = json!(32_000);
    let reply = post_messages(&proxy, &body).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1);
    let bound = (seen[0].body.len() as u64).div_ceil(3);
    assert!(
        bound < 30_000 - 4_096,
        "the body is too large to test: {bound}"
    );
    assert_eq!(seen[0].json()["max_tokens"], 30_000 - bound);

    // A small request keeps the client's value.
    let small = request(&[json!({"role": "user", "content": "hi"})], false);
    let reply = post_messages(&proxy, &small).await;
    assert_eq!(reply.status, 200);
    assert_eq!(upstream.seen()[1].json()["max_tokens"], 1024);
}

/// A request that opts into Claude's 1M-token window is managed against it: a 220K-token
/// conversation goes up whole, where the same conversation without the beta (a 200K window)
/// is reduced to fit.
#[tokio::test]
async fn the_long_context_beta_is_managed_as_the_window_it_asks_for() {
    let ok = || {
        json_response(
            200,
            &json!({"id": "msg_1", "type": "message", "role": "assistant",
                "model": MODEL, "content": [{"type": "text", "text": "done"}],
                "stop_reason": "end_turn", "stop_sequence": null,
                "usage": {"input_tokens": 10, "output_tokens": 2}}),
        )
    };
    let upstream = Upstream::replying(move |_, _| ok()).await;
    let proxy = Proxy::start(&upstream.url()).await;
    // Outputs under the stale lane's size: nothing goes unless the window demands it.
    let messages = long_session(450, 50);
    let body = request(&messages, false).to_string();
    let headers = |beta: &'static str| {
        [
            ("content-type", "application/json"),
            ("x-api-key", "sk-ant-long-context"),
            ("x-magic-context-session", beta),
            ("anthropic-beta", beta),
        ]
    };
    let long = send(
        Method::POST,
        &proxy.url("/v1/messages"),
        &headers("context-1m-2025-08-07"),
        body.clone(),
    )
    .await;
    assert_eq!(long.status, 200, "{}", long.text());
    let plain = send(
        Method::POST,
        &proxy.url("/v1/messages"),
        &headers("claude-code-20250219"),
        body.clone(),
    )
    .await;
    assert_eq!(plain.status, 200, "{}", plain.text());
    let seen = upstream.seen();
    let dropped = |index: usize| {
        String::from_utf8_lossy(&seen[index].body)
            .matches("[dropped §")
            .count()
    };
    // Inside the 1M window only the free lanes of a first render act (a near-duplicate or
    // two); a 200K window must take most of the history.
    let (long, plain) = (dropped(0), dropped(1));
    assert!(
        long <= 5 && plain > 100,
        "dropped {long} with the beta, {plain} without"
    );
    assert!(seen[1].body.len() < seen[0].body.len() * 9 / 10);
}
