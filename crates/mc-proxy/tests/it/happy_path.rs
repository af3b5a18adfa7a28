//! A streamed Claude Code style conversation through the proxy to the simulated provider:
//! the client gets the provider's bytes, the store holds the conversation, the provider
//! caches, and every upstream request carries the engine's tags and breakpoints.

use axum::http::Method;
use mc_wire::anthropic::{MessageAccumulator, MessagesRequest, StreamEvent, to_conversation};
use serde_json::{Value, json};

use crate::support::{Proxy, cache_markers, message_texts, send, sim, sse_events, tap};

const SESSION: &str = "0b9a4c4e-6a55-4b39-9d0c-3f1b7d2a8e11";

fn script() -> Value {
    json!({"turns": [
        {"content": [
            {"type": "text", "text": "Let me look at the files."},
            {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"path": "Cargo.toml"}}]},
        {"content": [{"type": "text", "text": "A Rust workspace of ten crates."}]},
        {"content": [{"type": "text", "text": "The proxy lives in crates/mc-proxy."}]},
    ], "final_text": "Nothing more."})
}

/// A system prompt well over the simulated model's minimum cacheable size.
fn system_prompt() -> String {
    let mut text = String::from("You are a careful coding agent working in a Rust repository.\n");
    for rule in 0..150 {
        text.push_str(&format!(
            "Rule {rule}: read the code before changing it, keep changes small, run the tests.\n"
        ));
    }
    text
}

fn tools() -> Value {
    json!([
        {"name": "Bash", "description": "Runs a shell command.",
         "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
        {"name": "Read", "description": "Reads a file.",
         "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    ])
}

/// The tool output a client sends back for the call `tool_use`.
fn tool_output(tool_use: &Value) -> String {
    match tool_use["name"].as_str() {
        Some("Bash") => "Cargo.toml\ncrates\nREADME.md\n".repeat(20),
        _ => "[workspace]\nmembers = [\"crates/*\"]\nresolver = \"3\"\n".repeat(30),
    }
}

/// The assistant message a stream describes.
fn accumulate(events: &[(Option<String>, Value)]) -> Value {
    let mut accumulator = MessageAccumulator::new();
    for (_, data) in events {
        let event = StreamEvent::decode(data.to_string().as_bytes(), usize::MAX).unwrap();
        accumulator.push(&event).unwrap();
    }
    assert!(
        accumulator.is_complete(),
        "stream ended without message_stop"
    );
    let message = accumulator.finish().unwrap();
    json!({
        "role": "assistant",
        "content": serde_json::to_value(&message.content).unwrap(),
        "stop_reason": message.stop_reason(),
    })
}

#[tokio::test]
async fn streamed_tool_conversation_reaches_the_sim_and_the_store() {
    let sim = sim(&script(), None).await;
    let (upstream, relayed) = tap(sim.local_addr()).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let system = system_prompt();
    let headers = [
        ("content-type", "application/json"),
        ("x-api-key", "sk-ant-test-happy"),
        ("anthropic-version", "2023-06-01"),
        ("x-claude-code-session-id", SESSION),
    ];

    let mut messages = vec![json!({"role": "user", "content": "What is in this repository?"})];
    let mut last_body = Value::Null;
    for call in 0..4 {
        let body = json!({
            "model": crate::support::MODEL,
            "max_tokens": 2048,
            "stream": true,
            "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
            "tools": tools(),
            "messages": messages,
        });
        let reply = send(
            Method::POST,
            &proxy.url("/v1/messages"),
            &headers,
            body.to_string(),
        )
        .await;
        assert_eq!(reply.status, 200, "call {call}: {}", reply.text());
        assert!(
            reply.headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        // Byte for byte what the provider sent for this very request.
        let (status, sim_bytes) = relayed.lock().unwrap()[call].clone();
        assert_eq!(status, 200);
        assert_eq!(reply.body, sim_bytes, "call {call}: the stream was altered");

        let events = sse_events(&reply.body);
        let names: Vec<&str> = events
            .iter()
            .map(|(name, _)| name.as_deref().unwrap_or(""))
            .collect();
        assert_eq!(names.first(), Some(&"message_start"), "{names:?}");
        assert_eq!(names.last(), Some(&"message_stop"), "{names:?}");
        assert_eq!(
            names
                .iter()
                .filter(|n| **n == "content_block_start")
                .count(),
            names.iter().filter(|n| **n == "content_block_stop").count(),
        );
        for (name, data) in &events {
            assert_eq!(
                name.as_deref(),
                data["type"].as_str(),
                "event name = data type"
            );
        }
        let answer = accumulate(&events);
        let blocks = answer["content"].as_array().unwrap().clone();
        let stop_reason = answer["stop_reason"].as_str().unwrap().to_owned();
        messages.push(json!({"role": "assistant", "content": blocks}));
        match call {
            0 | 1 => {
                assert_eq!(stop_reason, "tool_use", "call {call}");
                let results: Vec<Value> = blocks
                    .iter()
                    .filter(|block| block["type"] == "tool_use")
                    .map(|block| {
                        json!({"type": "tool_result", "tool_use_id": block["id"],
                               "content": tool_output(block)})
                    })
                    .collect();
                assert_eq!(results.len(), 1);
                messages.push(json!({"role": "user", "content": results}));
            }
            2 => {
                assert_eq!(blocks[0]["text"], "A Rust workspace of ten crates.");
                messages.push(json!({"role": "user", "content": "Where does the proxy live?"}));
            }
            _ => assert_eq!(blocks[0]["text"], "The proxy lives in crates/mc-proxy."),
        }
        last_body = body;
    }

    // The store holds every message the client sent, as sent, in one session.
    let ids = proxy.session_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert!(ids[0].starts_with(&format!("cc-{SESSION}-")), "{ids:?}");
    let request = MessagesRequest::decode(last_body.to_string().as_bytes(), usize::MAX).unwrap();
    let sent = to_conversation(&request);
    assert_eq!(sent.len(), 7);
    let stored: Vec<_> = proxy
        .messages(&ids[0])
        .into_iter()
        .map(|stored| stored.message)
        .collect();
    assert_eq!(stored, sent);

    // The provider read the cache from the second call on.
    let ledger = sim.ledger();
    assert_eq!(ledger.len(), 4);
    assert!(ledger.iter().all(|row| row.status == 200));
    assert_eq!(ledger[0].cache_read, 0);
    for pair in ledger.windows(2) {
        // Nothing busted: the whole previous prompt is the cached prefix of the next.
        assert_eq!(
            pair[1].cache_read, pair[0].prompt_tokens,
            "call {}: {ledger:?}",
            pair[1].seq
        );
    }
    assert!(ledger[0].prompt_tokens > 2_000, "{ledger:?}");

    // Upstream requests: the engine's tags, at most four breakpoints, the client's system
    // prompt and tools untouched, its key passed through.
    let seen = upstream.seen();
    assert_eq!(seen.len(), 4);
    let mut first_tag = None;
    for (call, request) in seen.iter().enumerate() {
        assert_eq!(request.uri, "/v1/messages");
        assert_eq!(request.header("x-api-key"), Some("sk-ant-test-happy"));
        let body = request.json();
        let markers = cache_markers(&body);
        assert!((1..=4).contains(&markers), "call {call}: {markers} markers");
        assert_eq!(body["system"][0]["text"], system.as_str());
        assert_eq!(body["tools"], tools());
        assert_eq!(body["stream"], true);
        // m[0] and m[1], then one upstream message per client message.
        let client_messages = [1, 3, 5, 7][call];
        assert_eq!(
            body["messages"].as_array().unwrap().len(),
            2 + client_messages
        );
        let texts = message_texts(&body);
        let question = texts
            .iter()
            .find(|text| text.ends_with("What is in this repository?"))
            .unwrap_or_else(|| panic!("call {call}: first question missing: {texts:?}"));
        let tag = question
            .strip_suffix("What is in this repository?")
            .unwrap();
        assert!(is_tag(tag), "call {call}: `{tag}` is not an engine tag");
        // A tag names the same unit on every call.
        assert_eq!(first_tag.get_or_insert_with(|| tag.to_owned()), tag);
        let tool_results: Vec<&Value> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|message| message["content"].as_array().into_iter().flatten())
            .filter(|block| block["type"] == "tool_result")
            .collect();
        assert_eq!(tool_results.len(), call.min(2), "call {call}");
        for result in tool_results {
            let text = result["content"][0]["text"]
                .as_str()
                .or(result["content"].as_str())
                .unwrap();
            let tag_end = text.find("§ ").map(|at| at + "§ ".len()).unwrap_or(0);
            assert!(is_tag(&text[..tag_end]), "untagged tool result: {result}");
        }
    }
    proxy.shutdown().await;
}

/// Whether `text` is exactly one engine tag, `§N§ `.
fn is_tag(text: &str) -> bool {
    text.strip_prefix('§')
        .and_then(|rest| rest.strip_suffix("§ "))
        .is_some_and(|number| !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
}

/// DESIGN §7: a client retrying an identical request (here after the provider was
/// overloaded) gets an identical upstream request, so the retry hits the cache the first
/// attempt would have written.
/// On a multi-thread runtime, as `serve` runs; the other tests run on a current-thread one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_identical_request_is_sent_up_byte_identical() {
    let upstream = crate::support::Upstream::replying(|_, index| {
        if index % 2 == 0 {
            crate::support::json_response(
                529,
                &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            )
        } else {
            crate::support::json_response(200, &crate::support::anthropic_message("ok"))
        }
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    let headers = [
        ("content-type", "application/json"),
        ("x-claude-code-session-id", SESSION),
    ];
    let mut messages = vec![json!({"role": "user", "content": "What is in this repository?"})];
    for turn in 0..3 {
        let body = json!({
            "model": crate::support::MODEL,
            "max_tokens": 1024,
            "system": system_prompt(),
            "tools": tools(),
            "messages": messages,
        })
        .to_string();
        for attempt in [529, 200] {
            let url = proxy.url("/v1/messages");
            let reply = send(Method::POST, &url, &headers, body.clone()).await;
            assert_eq!(reply.status.as_u16(), attempt, "turn {turn}");
        }
        let seen = upstream.seen();
        let (first, retry) = (&seen[2 * turn], &seen[2 * turn + 1]);
        assert_eq!(first.body, retry.body, "turn {turn}: the retry differs");
        messages.push(json!({"role": "assistant", "content": "ok"}));
        messages.push(json!({"role": "user", "content": format!("and then {turn}?")}));
    }
}
