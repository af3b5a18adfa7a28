//! The simulated provider's OpenAI Responses side over real HTTP.

use mc_wire::responses::{EventAccumulator, Item, ResponsesResponse, StreamEvent};
use mc_wire::sse::SseDecoder;
use serde_json::{Value, json};

use crate::server::{json_of, long_text, post, post_raw, start};

fn responses_request(history: &[Value], stream: bool) -> Value {
    let mut input = vec![json!({
        "type": "message", "role": "developer",
        "content": [{"type": "input_text", "text": long_text(700)}],
    })];
    input.extend_from_slice(history);
    json!({
        "model": "gpt-5", "input": input, "stream": stream, "store": false,
        "tools": [{"type": "function", "name": "bash", "parameters": {"type": "object"}}],
        "prompt_cache_key": "thread-1",
    })
}

/// Decodes a Responses SSE body: every event (named by its type), accumulated.
fn accumulate(bytes: &[u8]) -> (Vec<StreamEvent>, ResponsesResponse) {
    let mut decoder = SseDecoder::new();
    let mut accumulator = EventAccumulator::new();
    let mut events = Vec::new();
    for sse in decoder.push(bytes).unwrap() {
        let event = StreamEvent::decode(sse.data.as_bytes(), 1 << 20).unwrap();
        assert_eq!(sse.event.as_deref(), Some(event.kind.as_str()));
        assert_eq!(
            event.encode(),
            sse.data.as_bytes(),
            "events are what mc-wire writes"
        );
        accumulator.push(&event);
        events.push(event);
    }
    decoder.finish().unwrap();
    assert!(
        accumulator.is_finished(),
        "the stream must end with a terminal event"
    );
    (events, accumulator.finish().unwrap())
}

fn turns() -> Value {
    json!([
        { "content": [
            { "type": "thinking", "thinking": "not sent on this wire" },
            { "type": "text", "text": "Running the tests now, one moment please." },
            { "type": "tool_use", "name": "bash", "input": { "command": "cargo test --workspace" } },
        ] },
        { "content": [{ "type": "text", "text": "All tests pass." }] },
    ])
}

#[tokio::test]
async fn streaming_and_not_with_cached_tokens_on_the_second_call() {
    let (server, clock) = start(turns(), None).await;
    let user = json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run the tests"}]});
    let (status, bytes) = post(
        &server,
        "/v1/responses",
        &responses_request(std::slice::from_ref(&user), true),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let (events, response) = accumulate(&bytes);
    let kinds: Vec<&str> = events.iter().map(|event| event.kind.as_str()).collect();
    assert_eq!(
        kinds[..3],
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added"
        ]
    );
    assert_eq!(kinds.last(), Some(&"response.completed"));
    assert!(kinds.contains(&"response.output_text.delta"));
    assert!(kinds.contains(&"response.function_call_arguments.delta"));
    let text: String = events
        .iter()
        .filter(|event| event.kind == "response.output_text.delta")
        .filter_map(StreamEvent::delta_text)
        .collect();
    assert_eq!(text, "Running the tests now, one moment please.");
    assert!(response.id.as_deref().unwrap().starts_with("resp_sim_"));
    let output = response.output_items();
    assert_eq!(output.len(), 2);
    let Item::FunctionCall(call) = &output[1] else {
        panic!("a function call, got {:?}", output[1])
    };
    assert!(call.call_id.starts_with("call_sim_"));
    assert_eq!(
        serde_json::from_str::<Value>(&call.arguments).unwrap(),
        json!({ "command": "cargo test --workspace" })
    );
    let first_usage = response.usage.clone().unwrap();
    assert_eq!(first_usage.cached_tokens(), Some(0));

    clock.advance(5_000);
    let history = [
        user,
        serde_json::to_value(&output[0]).unwrap(),
        serde_json::to_value(&output[1]).unwrap(),
        json!({"type": "function_call_output", "call_id": call.call_id, "output": "test result: ok. 12 passed"}),
    ];
    let (status, bytes) = post(
        &server,
        "/v1/responses",
        &responses_request(&history, false),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let response = ResponsesResponse::decode(&bytes, 1 << 20).unwrap();
    let body = json_of(&bytes);
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    assert_eq!(body["output"][0]["content"][0]["text"], "All tests pass.");
    let usage = response.usage.unwrap();
    let cached = usage.cached_tokens().unwrap();
    assert!(cached >= 1024, "{usage:?}");
    assert_eq!(cached % 128, 0);
    assert!(cached <= usage.input_tokens.unwrap());
    assert_eq!(
        usage.total_tokens,
        Some(usage.input_tokens.unwrap() + usage.output_tokens.unwrap())
    );
    let ledger = server.ledger();
    assert_eq!(ledger.len(), 2);
    assert_eq!(ledger[1].cache_read, cached);
    assert_eq!(ledger[0].prompt_tokens, first_usage.input_tokens.unwrap());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn stored_state_and_bad_bodies_get_openai_errors() {
    let (server, _clock) = start(turns(), None).await;
    let (status, bytes) = post(
        &server,
        "/v1/responses",
        &json!({"model": "gpt-5", "previous_response_id": "resp_gone", "input": "go on"}),
    )
    .await;
    assert_eq!(status, 400);
    let body = json_of(&bytes);
    assert_eq!(body["error"]["code"], "previous_response_not_found");
    assert_eq!(body["error"]["param"], "previous_response_id");

    let (status, bytes) = post_raw(&server, "/v1/responses", b"{\"model\": 3}".to_vec()).await;
    assert_eq!(status, 400);
    assert_eq!(json_of(&bytes)["error"]["type"], "invalid_request_error");

    let (status, bytes) = post(
        &server,
        "/v1/responses",
        &json!({"model": "gpt-5", "input": []}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        json_of(&bytes)["error"]["code"],
        "missing_required_parameter"
    );
    assert!(server.ledger().is_empty(), "refused before pricing");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_overflow_is_refused_with_openais_code() {
    let (server, _clock) = start(turns(), Some(500)).await;
    let (status, bytes) = post(&server, "/v1/responses", &responses_request(&[], false)).await;
    assert_eq!(status, 400);
    let body = json_of(&bytes);
    assert_eq!(body["error"]["code"], "context_length_exceeded");
    assert_eq!(body["error"]["param"], "input");
    server.shutdown().await.unwrap();
}
