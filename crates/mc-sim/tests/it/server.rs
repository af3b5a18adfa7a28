//! The simulated provider over real HTTP on 127.0.0.1:0: the Anthropic Messages side, the
//! ledger, ids and errors. Time is a `SimClock`; no test sleeps.

use mc_sim::clock::SimClock;
use mc_sim::script::Script;
use mc_sim::server::{Responder, SimConfig, SimServer};
use mc_wire::anthropic::{ContentBlock, MessageAccumulator, MessagesResponse, StreamEvent};
use mc_wire::sse::SseDecoder;
use serde_json::{Value, json};

/// A server playing `script` (JSON text) on a simulated clock.
pub(crate) async fn start(script: Value, window_tokens: Option<u64>) -> (SimServer, SimClock) {
    let script = Script::parse(&script.to_string(), "test script").unwrap();
    let clock = SimClock::new(1_700_000_000_000);
    let mut config = SimConfig::new(Responder::Script(script)).with_clock(clock.clone());
    if let Some(window_tokens) = window_tokens {
        config = config.with_window(window_tokens);
    }
    let server = SimServer::bind("127.0.0.1:0".parse().unwrap(), config)
        .await
        .unwrap();
    (server, clock)
}

pub(crate) fn url(server: &SimServer, path: &str) -> String {
    format!("http://{}{path}", server.local_addr())
}

/// POSTs `body` and returns the status and the body bytes, read chunk by chunk.
pub(crate) async fn post(server: &SimServer, path: &str, body: &Value) -> (u16, Vec<u8>) {
    post_raw(server, path, body.to_string().into_bytes()).await
}

pub(crate) async fn post_raw(server: &SimServer, path: &str, body: Vec<u8>) -> (u16, Vec<u8>) {
    let mut response = reqwest::Client::new()
        .post(url(server, path))
        .header("content-type", "application/json")
        .header("anthropic-version", "2023-06-01")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        bytes.extend_from_slice(&chunk);
    }
    (status, bytes)
}

pub(crate) fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

/// Decodes an Anthropic SSE body into its events and the message they accumulate to.
pub(crate) fn accumulate(bytes: &[u8]) -> (Vec<String>, MessagesResponse) {
    let mut decoder = SseDecoder::new();
    let mut accumulator = MessageAccumulator::new();
    let mut names = Vec::new();
    // Feed in small pieces, as a network would.
    for piece in bytes.chunks(7) {
        for event in decoder.push(piece).unwrap() {
            let payload = StreamEvent::decode(event.data.as_bytes(), 1 << 20).unwrap();
            assert_eq!(event.event.as_deref(), Some(payload.type_name()));
            names.push(payload.type_name().to_owned());
            accumulator.push(&payload).unwrap();
        }
    }
    decoder.finish().unwrap();
    assert!(accumulator.is_complete());
    (names, accumulator.finish().unwrap())
}

/// A long system prompt (well over Sonnet's 1,024-token cache minimum).
pub(crate) fn long_text(words: usize) -> String {
    (0..words)
        .map(|i| format!("rule{i} keeps the answer short."))
        .collect::<Vec<_>>()
        .join(" ")
}

const EPHEMERAL: &str = "ephemeral";

/// A Claude Code-style request: a cached system prompt, the history, and a breakpoint on the
/// last block of the last message.
pub(crate) fn claude_code_request(history: &[Value], stream: bool) -> Value {
    let mut messages = history.to_vec();
    if let Some(Value::Array(blocks)) = messages
        .last_mut()
        .and_then(|message| message.get_mut("content"))
        && let Some(Value::Object(block)) = blocks.last_mut()
    {
        block.insert("cache_control".to_owned(), json!({ "type": EPHEMERAL }));
    }
    json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "stream": stream,
        "system": [
            { "type": "text", "text": "You are Claude Code." },
            { "type": "text", "text": long_text(600), "cache_control": { "type": EPHEMERAL } },
        ],
        "tools": [{ "name": "Bash", "description": "Runs a command.",
                    "input_schema": { "type": "object", "properties": { "command": { "type": "string" } } } }],
        "messages": messages,
    })
}

fn user_text(text: &str) -> Value {
    json!({ "role": "user", "content": [{ "type": "text", "text": text }] })
}

fn scripted_turns() -> Value {
    json!([
        { "content": [
            { "type": "thinking", "thinking": "The user wants the files listed; ls will do.", "signature": "sig-abc" },
            { "type": "text", "text": "Let me list the files in the working directory for you." },
            { "type": "tool_use", "name": "Bash", "input": { "command": "ls -la", "description": "List files" } },
        ] },
        { "content": [{ "type": "text", "text": "There are three files." }] },
    ])
}

#[tokio::test]
async fn streaming_response_accumulates_to_the_scripted_blocks() {
    let (server, _clock) = start(scripted_turns(), None).await;
    let request = claude_code_request(&[user_text("list the files")], true);
    let (status, bytes) = post(&server, "/v1/messages?beta=true", &request).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let (names, message) = accumulate(&bytes);

    assert_eq!(names.first().map(String::as_str), Some("message_start"));
    assert_eq!(&names[names.len() - 2..], ["message_delta", "message_stop"]);
    assert!(
        names
            .iter()
            .filter(|name| *name == "content_block_delta")
            .count()
            > 6
    );
    assert!(message.id.starts_with("msg_sim_"));
    assert_eq!(message.stop_reason(), Some("tool_use"));
    assert_eq!(message.model(), Some("claude-sonnet-4-5"));

    let [
        ContentBlock::Thinking(thinking),
        ContentBlock::Text(text),
        ContentBlock::ToolUse(tool),
    ] = message.content.as_slice()
    else {
        panic!("unexpected blocks: {:?}", message.content);
    };
    assert_eq!(
        thinking.thinking,
        "The user wants the files listed; ls will do."
    );
    assert_eq!(thinking.signature.as_deref(), Some("sig-abc"));
    assert_eq!(
        text.text,
        "Let me list the files in the working directory for you."
    );
    assert_eq!(tool.name, "Bash");
    assert!(tool.id.starts_with("toolu_sim_"));
    assert_eq!(
        tool.input,
        json!({ "command": "ls -la", "description": "List files" })
    );

    let usage = message.usage.unwrap();
    let ledger = server.ledger();
    assert_eq!(ledger.len(), 1);
    let row = &ledger[0];
    assert_eq!(usage.input_tokens, Some(row.input_tokens));
    assert_eq!(usage.cache_read_input_tokens, Some(row.cache_read));
    assert_eq!(
        usage.cache_creation_input_tokens,
        Some(row.cache_write_5m + row.cache_write_1h)
    );
    assert_eq!(
        usage.cache_creation_split(),
        Some((row.cache_write_5m, row.cache_write_1h))
    );
    assert_eq!(usage.output_tokens, Some(row.output_tokens));
    assert!(row.output_tokens > 10);
    assert_eq!(usage.prompt_tokens(), row.prompt_tokens);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn non_streaming_response_matches_the_script() {
    let (server, _clock) = start(scripted_turns(), None).await;
    let request = claude_code_request(&[user_text("list the files")], false);
    let (status, bytes) = post(&server, "/v1/messages", &request).await;
    assert_eq!(status, 200);
    let message = MessagesResponse::decode(&bytes, 1 << 20).unwrap();
    assert_eq!(message.content.len(), 3);
    assert_eq!(message.stop_reason(), Some("tool_use"));
    let body = json_of(&bytes);
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    assert_eq!(
        body["content"][1],
        json!({ "type": "text", "text": "Let me list the files in the working directory for you." })
    );
    assert!(body["usage"]["cache_creation"]["ephemeral_5m_input_tokens"].is_u64());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn growing_history_reads_the_cache_on_the_second_call() {
    let (server, clock) = start(scripted_turns(), None).await;
    let first = claude_code_request(&[user_text("list the files")], true);
    let (status, bytes) = post(&server, "/v1/messages", &first).await;
    assert_eq!(status, 200);
    let (_, answer) = accumulate(&bytes);
    let tool_id = match &answer.content[2] {
        ContentBlock::ToolUse(tool) => tool.id.clone(),
        other => panic!("expected tool_use, got {other:?}"),
    };

    clock.advance(20_000);
    let assistant =
        json!({ "role": "assistant", "content": serde_json::to_value(&answer.content).unwrap() });
    let result = json!({ "role": "user", "content": [
        { "type": "tool_result", "tool_use_id": tool_id, "content": "a.rs\nb.rs\nCargo.toml" },
    ] });
    let second = claude_code_request(&[user_text("list the files"), assistant, result], true);
    let (status, bytes) = post(&server, "/v1/messages", &second).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let (_, answer) = accumulate(&bytes);

    let ledger = server.ledger();
    assert_eq!(ledger.len(), 2);
    assert_eq!(ledger[0].cache_read, 0);
    assert!(ledger[0].cache_write_5m > 1024, "{:?}", ledger[0]);
    assert!(
        ledger[1].cache_read >= ledger[0].cache_write_5m,
        "{:?}",
        ledger[1]
    );
    assert!(ledger[1].at_ms >= ledger[0].at_ms + 20_000);
    let usage = answer.usage.unwrap();
    assert_eq!(usage.cache_read_input_tokens, Some(ledger[1].cache_read));
    assert!(ledger[1].cost_usd < ledger[0].cost_usd);

    // The ledger endpoint shows the same rows.
    let rows = reqwest::get(url(&server, "/_sim/ledger")).await.unwrap();
    assert_eq!(rows.status().as_u16(), 200);
    let rows: Value = rows.json().await.unwrap();
    assert_eq!(rows.as_array().map(Vec::len), Some(2));
    assert_eq!(rows[1]["cache_read"], json!(ledger[1].cache_read));
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_cache_expires_after_five_minutes_of_simulated_time() {
    let (server, clock) = start(json!([]), None).await;
    let request = claude_code_request(&[user_text("hello")], false);
    assert_eq!(post(&server, "/v1/messages", &request).await.0, 200);
    clock.advance(60_000);
    assert_eq!(post(&server, "/v1/messages", &request).await.0, 200);
    clock.advance(6 * 60_000);
    assert_eq!(post(&server, "/v1/messages", &request).await.0, 200);
    let ledger = server.ledger();
    assert!(ledger[1].cache_read > 0);
    assert_eq!(ledger[2].cache_read, 0, "{:?}", ledger[2]);
    assert!(ledger[2].cache_write_5m > 0);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn ids_are_unique_across_calls_and_servers() {
    let mut ids = std::collections::HashSet::new();
    for _ in 0..2 {
        let (server, _clock) = start(
            json!([{ "repeat": 5, "content": [
            { "type": "tool_use", "name": "Read", "input": { "path": "a" } },
            { "type": "tool_use", "name": "Read", "input": { "path": "b" } },
        ] }]),
            None,
        )
        .await;
        for stream in [false, true, false, true, false] {
            let request = claude_code_request(&[user_text("go")], stream);
            let (status, bytes) = post(&server, "/v1/messages", &request).await;
            assert_eq!(status, 200);
            let message = if stream {
                accumulate(&bytes).1
            } else {
                MessagesResponse::decode(&bytes, 1 << 20).unwrap()
            };
            assert!(ids.insert(message.id.clone()), "duplicate {}", message.id);
            for block in &message.content {
                if let ContentBlock::ToolUse(tool) = block {
                    assert!(ids.insert(tool.id.clone()), "duplicate {}", tool.id);
                }
            }
        }
        server.shutdown().await.unwrap();
    }
    assert_eq!(ids.len(), 2 * 5 * 3);
}

#[tokio::test]
async fn more_than_four_breakpoints_get_the_providers_error() {
    let (server, _clock) = start(json!([]), None).await;
    let marked = |text: &str| json!({ "type": "text", "text": text, "cache_control": { "type": EPHEMERAL } });
    let request = json!({
        "model": "claude-sonnet-4-5", "max_tokens": 100,
        "system": [marked("a"), marked("b")],
        "messages": [{ "role": "user", "content": [marked("c"), marked("d"), marked("e")] }],
    });
    let (status, bytes) = post(&server, "/v1/messages", &request).await;
    assert_eq!(status, 400);
    let body = json_of(&bytes);
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(
        body["error"]["message"],
        "A maximum of 4 blocks with cache_control may be provided. Found 5."
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn over_the_window_gets_prompt_is_too_long() {
    let (server, _clock) = start(
        json!([{ "content": [{ "type": "text", "text": "first" }] }]),
        Some(2_000),
    )
    .await;
    let request = claude_code_request(&[user_text("hello")], true);
    let (status, bytes) = post(&server, "/v1/messages", &request).await;
    assert_eq!(status, 400);
    let body = json_of(&bytes);
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("prompt is too long: "), "{message}");
    assert!(message.ends_with(" tokens > 2000 maximum"), "{message}");

    // The rejected call played nothing: a small request still gets the first turn.
    let small = json!({ "model": "claude-sonnet-4-5", "max_tokens": 10,
                        "messages": [user_text("hi")] });
    let (status, bytes) = post(&server, "/v1/messages", &small).await;
    assert_eq!(status, 200);
    assert_eq!(json_of(&bytes)["content"][0]["text"], "first");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn count_tokens_counts_the_prompt() {
    let (server, _clock) = start(json!([]), None).await;
    let small = json!({ "model": "claude-sonnet-4-5", "messages": [user_text("hi")] });
    let large = claude_code_request(&[user_text("hi")], false);
    let (status, small_bytes) = post(&server, "/v1/messages/count_tokens", &small).await;
    assert_eq!(status, 200);
    let (_, large_bytes) = post(&server, "/v1/messages/count_tokens?beta=true", &large).await;
    let small_count = json_of(&small_bytes)["input_tokens"].as_u64().unwrap();
    let large_count = json_of(&large_bytes)["input_tokens"].as_u64().unwrap();
    assert!(small_count > 0);
    assert!(large_count > 3_000, "{large_count}");
    assert!(server.ledger().is_empty(), "counting is not a call");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_token_scale_scales_what_the_server_counts_and_reports() {
    let script = json!([{"content": [{"type": "text", "text": "ok"}]}]);
    let script = Script::parse(&script.to_string(), "test script").unwrap();
    let scale = mc_sim::TokenScale::new(1.25).unwrap();
    let scaled = SimServer::bind(
        "127.0.0.1:0".parse().unwrap(),
        SimConfig::new(Responder::Script(script)).with_token_scale(scale),
    )
    .await
    .unwrap();
    let (plain, _clock) = start(json!([{"content": [{"type": "text", "text": "ok"}]}]), None).await;
    let request = claude_code_request(&[user_text("hi")], false);
    let count = |bytes: &[u8]| json_of(bytes)["input_tokens"].as_u64().unwrap();
    let (_, plain_count) = post(&plain, "/v1/messages/count_tokens", &request).await;
    let (_, scaled_count) = post(&scaled, "/v1/messages/count_tokens", &request).await;
    let (plain_count, scaled_count) = (count(&plain_count), count(&scaled_count));
    // Each block is rounded on its own: within a token per block of 1.25 times.
    let expected = plain_count as f64 * 1.25;
    assert!(
        (scaled_count as f64 - expected).abs() < 30.0,
        "{scaled_count} vs {plain_count}"
    );
    let (status, _) = post(&scaled, "/v1/messages", &request).await;
    assert_eq!(status, 200);
    let ledger = scaled.ledger();
    assert_eq!(ledger[0].prompt_tokens, scaled_count);
    scaled.shutdown().await.unwrap();
    plain.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_requests_get_json_errors_never_a_crash() {
    let (server, _clock) = start(json!([]), None).await;
    let cases: [(&[u8], &str); 5] = [
        (b"{not json", "malformed JSON"),
        (b"", "malformed JSON"),
        (
            br#"{"model":"m","max_tokens":5}"#,
            "missing required field `messages`",
        ),
        (
            br#"{"model":"m","max_tokens":5,"messages":[{"role":"robot","content":"x"}]}"#,
            "unknown role",
        ),
        (
            br#"{"model":"m","messages":[{"role":"user","content":"x"}]}"#,
            "max_tokens: Field required",
        ),
    ];
    for (body, expected) in cases {
        let (status, bytes) = post_raw(&server, "/v1/messages", body.to_vec()).await;
        assert_eq!(status, 400);
        let body = json_of(&bytes);
        assert_eq!(body["type"], "error");
        assert_eq!(body["error"]["type"], "invalid_request_error");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(expected), "{message}");
    }
    let (status, bytes) = post_raw(&server, "/v1/nothing", b"{}".to_vec()).await;
    assert_eq!(status, 404);
    assert_eq!(json_of(&bytes)["error"]["type"], "not_found_error");
    assert!(server.ledger().is_empty());

    // The server is still healthy.
    let request =
        json!({ "model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [user_text("hi")] });
    let (status, bytes) = post(&server, "/v1/messages", &request).await;
    assert_eq!(status, 200);
    assert_eq!(json_of(&bytes)["content"][0]["text"], "Done.");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn models_are_listed_for_both_wires() {
    let (server, _clock) = start(json!([]), None).await;
    let models: Value = reqwest::get(url(&server, "/v1/models"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let data = models["data"].as_array().unwrap();
    assert!(data.iter().any(|model| model["id"] == "claude-sonnet-4-5"));
    assert!(
        data.iter()
            .all(|model| model["type"] == "model" && model["object"] == "model")
    );
    assert_eq!(models["has_more"], false);
    server.shutdown().await.unwrap();
}
