//! The OpenAI Chat Completions route: streamed and not, the leading instructions kept
//! verbatim, the conversation after them managed and stored.

use axum::http::Method;
use mc_wire::openai::ChatRequest;
use serde_json::{Value, json};

use crate::support::{Proxy, Upstream, json_response, send, sim, sse_events, tap};

/// Instructions long enough for the provider to cache.
fn instructions() -> Vec<Value> {
    let rules: String = (0..150)
        .map(|rule| format!("Rule {rule}: answer briefly and cite the file you read.\n"))
        .collect();
    vec![
        json!({"role": "system", "content": format!("You are a coding agent.\n{rules}")}),
        json!({"role": "developer", "content": [{"type": "text", "text": "Prefer small diffs."}], "name": "policy"}),
    ]
}

async fn post_chat(proxy: &Proxy, body: &Value) -> crate::support::Reply {
    send(
        Method::POST,
        &proxy.url("/v1/chat/completions"),
        &[
            ("content-type", "application/json"),
            ("authorization", "Bearer sk-openai-test"),
        ],
        body.to_string(),
    )
    .await
}

/// The conversation the store keeps for `messages`: everything after the instructions.
fn conversation(messages: &[Value]) -> Vec<mc_core::Message> {
    let body = json!({"model": "gpt-4o", "messages": messages}).to_string();
    let request = ChatRequest::decode(body.as_bytes(), usize::MAX).unwrap();
    request.messages[2..]
        .iter()
        .map(|message| mc_wire::openai::to_message(message).unwrap())
        .collect()
}

#[tokio::test]
async fn streamed_chat_keeps_instructions_verbatim_and_streams_the_sims_bytes() {
    let script = json!({"turns": [
        {"content": [{"type": "text", "text": "The parser lives in src/parse.rs."}]},
        {"content": [{"type": "text", "text": "It has forty tests."}]},
    ]});
    let sim = sim(&script, None).await;
    let (upstream, relayed) = tap(sim.local_addr()).await;
    let proxy = Proxy::start(&upstream.url()).await;

    let mut messages = instructions();
    messages.push(json!({"role": "user", "content": "Where is the parser?"}));
    let answers = ["The parser lives in src/parse.rs.", "It has forty tests."];
    for (call, expected) in answers.iter().enumerate() {
        let body = json!({
            "model": "gpt-4o",
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.2,
            "messages": messages,
        });
        let reply = post_chat(&proxy, &body).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.body, relayed.lock().unwrap()[call].1, "call {call}");
        let events = sse_events(&reply.body);
        assert_eq!(events.last().unwrap().1, "[DONE]");
        let text: String = events
            .iter()
            .filter_map(|(_, data)| data["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, *expected);
        messages.push(json!({"role": "assistant", "content": text}));
        messages.push(json!({"role": "user", "content": "How many tests does it have?"}));

        let seen = &upstream.seen()[call];
        let sent = seen.json();
        let sent_messages = sent["messages"].as_array().unwrap();
        assert_eq!(sent_messages[..2], instructions()[..], "call {call}");
        assert_eq!(sent["temperature"], 0.2);
        assert_eq!(sent["stream_options"], json!({"include_usage": true}));
        assert!(
            sent_messages[2..]
                .iter()
                .all(|message| message["role"] != "system" && message["role"] != "developer"),
            "{sent}"
        );
        let question = sent_messages
            .iter()
            .filter_map(|message| message["content"].as_str())
            .find(|content| content.ends_with("Where is the parser?"))
            .unwrap_or_else(|| panic!("question missing: {sent}"));
        assert!(question.starts_with('§'), "untagged: {question}");
    }
    let ledger = sim.ledger();
    assert_eq!(ledger.len(), 2);
    assert!(ledger[1].cache_read > 0, "{ledger:?}");

    let ids = proxy.session_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    // The last request's conversation, before the proxy's answer was appended.
    let sent = &messages[..messages.len() - 2];
    let stored: Vec<_> = proxy
        .messages(&ids[0])
        .into_iter()
        .map(|stored| stored.message)
        .collect();
    assert_eq!(stored, conversation(sent));
}

#[tokio::test]
async fn a_non_streamed_chat_answer_comes_back_as_sent() {
    let answer = json!({
        "id": "chatcmpl-abc", "object": "chat.completion", "created": 1_700_000_000, "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Done."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1500, "completion_tokens": 2, "total_tokens": 1502,
                  "prompt_tokens_details": {"cached_tokens": 1024}},
        "unknown_field": {"kept": true}
    });
    let body_text = format!("{}\n", serde_json::to_string_pretty(&answer).unwrap());
    let sent_text = body_text.clone();
    let upstream = Upstream::replying(move |_, _| {
        let mut response = json_response(200, &Value::Null);
        *response.body_mut() = sent_text.clone().into();
        response
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    let mut messages = instructions();
    messages.extend([
        json!({"role": "user", "content": "Fix the typo in README.md"}),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "edit", "arguments": "{\"path\":\"README.md\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "edited"}),
    ]);
    let body = json!({
        "model": "gpt-4o",
        "messages": messages,
        "tools": [{"type": "function", "function": {"name": "edit", "parameters": {"type": "object"}}}],
    });
    let reply = post_chat(&proxy, &body).await;
    assert_eq!(reply.status, 200);
    // Byte for byte, formatting included.
    assert_eq!(reply.text(), body_text);

    let sent = upstream.seen()[0].json();
    let sent_messages = sent["messages"].as_array().unwrap();
    assert_eq!(sent_messages[..2], instructions()[..]);
    // Then m[0], m[1] and the three conversation messages.
    assert_eq!(sent_messages.len(), 2 + 2 + 3, "{sent}");
    assert_eq!(sent["tools"], body["tools"]);
    assert!(sent.get("stream").is_none());
    let tool = sent_messages
        .iter()
        .find(|message| message["role"] == "tool")
        .unwrap();
    assert_eq!(tool["tool_call_id"], "call_1");
    let call = sent_messages
        .iter()
        .find(|message| message.get("tool_calls").is_some())
        .unwrap();
    assert_eq!(call["tool_calls"][0]["function"]["name"], "edit");

    let ids = proxy.session_ids();
    assert_eq!(ids.len(), 1);
    let stored: Vec<_> = proxy
        .messages(&ids[0])
        .into_iter()
        .map(|stored| stored.message)
        .collect();
    assert_eq!(stored, conversation(&messages));
}

#[tokio::test]
async fn a_stream_without_usage_is_asked_for_it_upstream_and_the_client_never_sees_it() {
    let script = json!({"turns": [
        {"content": [{"type": "text", "text": "The parser lives in src/parse.rs."}]},
    ]});
    let sim = sim(&script, None).await;
    let (upstream, relayed) = tap(sim.local_addr()).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let mut messages = instructions();
    messages.push(json!({"role": "user", "content": "Where is the parser?"}));
    let body = json!({"model": "gpt-4o", "stream": true, "messages": messages});
    let reply = post_chat(&proxy, &body).await;
    assert_eq!(reply.status, 200, "{}", reply.text());

    // Upstream, the proxy asked for usage and got it.
    let sent = upstream.seen()[0].json();
    assert_eq!(sent["stream_options"], json!({"include_usage": true}));
    let from_sim = sse_events(&relayed.lock().unwrap()[0].1);
    assert!(
        from_sim
            .iter()
            .any(|(_, data)| data["choices"] == json!([]) && data["usage"].is_object()),
        "{from_sim:?}"
    );
    // The client got the stream it asked for: the same chunks, no usage anywhere.
    let events = sse_events(&reply.body);
    assert_eq!(events.len(), from_sim.len() - 1);
    let client_text = String::from_utf8(reply.body.to_vec()).unwrap();
    assert!(!client_text.contains("\"usage\""), "{client_text}");
    let text: String = events
        .iter()
        .filter_map(|(_, data)| data["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "The parser lives in src/parse.rs.");
    assert_eq!(events.last().unwrap().1, "[DONE]");
    // The usage the client never saw reached the ledger.
    let session = mc_core::SessionId::new(proxy.session_ids()[0].clone()).unwrap();
    let mut calls = Vec::new();
    for _ in 0..50 {
        calls = proxy.store().read(|tx| tx.calls(&session, 10)).unwrap();
        if !calls.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(calls.len(), 1);
    assert!(
        calls[0].uncached_tokens.unwrap_or(0) + calls[0].cache_read_tokens.unwrap_or(0) > 0,
        "{calls:?}"
    );
}
