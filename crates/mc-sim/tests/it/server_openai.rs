//! The simulated provider's OpenAI Chat Completions side over real HTTP.

use mc_wire::openai::{ChatChunk, ChatResponse, ChunkAccumulator};
use mc_wire::sse::SseDecoder;
use serde_json::{Value, json};

use crate::server::{json_of, long_text, post, post_raw, start};

fn chat_request(history: &[Value], stream: bool, include_usage: bool) -> Value {
    let mut messages = vec![json!({ "role": "system", "content": long_text(700) })];
    messages.extend_from_slice(history);
    let mut request = json!({ "model": "gpt-4o", "messages": messages, "stream": stream });
    if include_usage {
        request["stream_options"] = json!({ "include_usage": true });
    }
    request
}

/// Decodes an OpenAI SSE body: the chunks before `[DONE]`, accumulated.
fn accumulate(bytes: &[u8]) -> (Vec<ChatChunk>, ChatResponse) {
    let mut decoder = SseDecoder::new();
    let mut accumulator = ChunkAccumulator::new();
    let mut chunks = Vec::new();
    let mut done = false;
    for event in decoder.push(bytes).unwrap() {
        assert!(!done, "data after [DONE]");
        if event.data == "[DONE]" {
            done = true;
            continue;
        }
        let chunk = ChatChunk::decode(event.data.as_bytes(), 1 << 20).unwrap();
        accumulator.push(&chunk);
        chunks.push(chunk);
    }
    decoder.finish().unwrap();
    assert!(done, "the stream must end with [DONE]");
    (chunks, accumulator.finish())
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
async fn streaming_and_non_streaming_with_cached_tokens_on_the_second_call() {
    let (server, clock) = start(turns(), None).await;
    let user = json!({ "role": "user", "content": "run the tests" });
    let (status, bytes) = post(
        &server,
        "/v1/chat/completions",
        &chat_request(std::slice::from_ref(&user), true, true),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let (chunks, response) = accumulate(&bytes);
    assert!(chunks.len() > 4);
    let id = response.id.clone().unwrap();
    assert!(id.starts_with("chatcmpl-sim-"));
    assert!(
        chunks
            .iter()
            .all(|chunk| chunk.id.as_deref() == Some(id.as_str()))
    );
    let last = chunks.last().unwrap();
    assert!(last.choices.is_empty() && last.usage.is_some());
    assert_eq!(response.finish_reason(), Some("tool_calls"));
    let message = response.message().unwrap();
    assert_eq!(
        serde_json::to_value(message.content.as_ref().unwrap()).unwrap(),
        json!("Running the tests now, one moment please.")
    );
    let calls = message.tool_calls.as_ref().unwrap();
    assert_eq!(calls.len(), 1);
    assert!(calls[0].id.starts_with("call_sim_"));
    assert_eq!(calls[0].function.name, "bash");
    assert_eq!(
        serde_json::from_str::<Value>(&calls[0].function.arguments).unwrap(),
        json!({ "command": "cargo test --workspace" })
    );
    let first_usage = response.usage.clone().unwrap();
    assert_eq!(first_usage.cached_tokens(), Some(0));

    clock.advance(5_000);
    let assistant = serde_json::to_value(message).unwrap();
    let result = json!({ "role": "tool", "tool_call_id": calls[0].id, "content": "test result: ok. 12 passed" });
    let (status, bytes) = post(
        &server,
        "/v1/chat/completions",
        &chat_request(&[user, assistant, result], false, false),
    )
    .await;
    assert_eq!(status, 200);
    let response = ChatResponse::decode(&bytes, 1 << 20).unwrap();
    let body = json_of(&bytes);
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["choices"][0]["message"]["content"], "All tests pass.");
    assert_eq!(response.finish_reason(), Some("stop"));
    let usage = response.usage.unwrap();
    let cached = usage.cached_tokens().unwrap();
    assert!(cached >= 1024, "{usage:?}");
    assert_eq!(cached % 128, 0);
    assert!(cached <= usage.prompt_tokens.unwrap());
    assert_eq!(
        usage.total_tokens,
        Some(usage.prompt_tokens.unwrap() + usage.completion_tokens.unwrap())
    );

    let ledger = server.ledger();
    assert_eq!(ledger.len(), 2);
    assert_eq!(ledger[1].cache_read, cached);
    assert_eq!(ledger[0].prompt_tokens, first_usage.prompt_tokens.unwrap());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn streams_without_include_usage_carry_no_usage() {
    let (server, _clock) = start(turns(), None).await;
    let user = json!({ "role": "user", "content": "run the tests" });
    let (_, bytes) = post(
        &server,
        "/v1/chat/completions",
        &chat_request(&[user], true, false),
    )
    .await;
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(!text.contains("\"usage\""), "{text}");
    assert!(text.ends_with("data: [DONE]\n\n"));
    let (chunks, response) = accumulate(&bytes);
    assert!(chunks.iter().all(|chunk| chunk.usage.is_none()));
    assert!(response.usage.is_none());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn openai_errors_have_openai_shape() {
    let (server, _clock) = start(json!([]), Some(1_000)).await;
    let (status, bytes) = post_raw(&server, "/v1/chat/completions", b"{\"model\":".to_vec()).await;
    assert_eq!(status, 400);
    let body = json_of(&bytes);
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("malformed JSON")
    );
    assert!(body.get("type").is_none());

    let (status, bytes) = post(
        &server,
        "/v1/chat/completions",
        &json!({ "model": "gpt-4o", "messages": [] }),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(json_of(&bytes)["error"]["code"], "empty_array");

    let user = json!({ "role": "user", "content": "hi" });
    let (status, bytes) = post(
        &server,
        "/v1/chat/completions",
        &chat_request(&[user], false, false),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(json_of(&bytes)["error"]["code"], "context_length_exceeded");
    server.shutdown().await.unwrap();
}
