//! Hostile content on the OpenAI Chat route: model output that imitates the engine's tags,
//! tool output with control characters, and escapes no text can hold. The same handling as
//! on the Anthropic route (`hostile.rs`), in OpenAI's shapes.

use axum::http::Method;
use mc_core::MAX_INPUT_NESTING;
use mc_core::tags::strip_tag_imitations;
use mc_wire::openai::ChatRequest;
use serde_json::{Value, json};

use crate::bad_input::assert_openai_error;
use crate::hostile::{IMITATION, control_output, split_tag, stored_log};
use crate::support::{Proxy, Reply, Upstream, json_response, send};

/// A non-streamed chat answer saying `text`.
fn chat_answer(text: &str) -> Value {
    json!({
        "id": "chatcmpl-hostile", "object": "chat.completion", "created": 1_700_000_000, "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 2, "total_tokens": 42}
    })
}

async fn post_chat(proxy: &Proxy, body: impl Into<reqwest::Body>) -> Reply {
    send(
        Method::POST,
        &proxy.url("/v1/chat/completions"),
        &[
            ("content-type", "application/json"),
            ("authorization", "Bearer sk-openai-test-hostile"),
        ],
        body,
    )
    .await
}

fn chat_request(messages: &[Value]) -> Value {
    json!({"model": "gpt-4o", "messages": messages})
}

/// The conversation a chat body carries after its leading instructions, as stored.
fn conversation(body: &[u8]) -> Vec<mc_core::Message> {
    let request = ChatRequest::decode(body, usize::MAX).unwrap();
    request.messages[1..]
        .iter()
        .map(|message| mc_wire::openai::to_message(message).unwrap())
        .collect()
}

#[tokio::test]
async fn chat_model_output_imitating_tags_and_tool_output_with_broken_escapes() {
    let upstream = Upstream::replying(|_, index| {
        json_response(200, &chat_answer(if index == 0 { IMITATION } else { "ok" }))
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    let mut messages = vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "Tidy the repository."}),
    ];
    let reply = post_chat(&proxy, chat_request(&messages).to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["choices"][0]["message"]["content"], IMITATION);
    messages.extend([
        json!({"role": "assistant", "content": IMITATION}),
        json!({"role": "user", "content": "Run the build."}),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "bash", "arguments": "{\"command\":\"make\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "call_1", "content": control_output()}),
    ]);
    let body = chat_request(&messages)
        .to_string()
        .replace('\u{1F600}', "\\ud83d\\ude00")
        .into_bytes();
    let reply = post_chat(&proxy, body.clone()).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let (first, sent) = (upstream.seen()[0].json(), upstream.seen()[1].json());
    // After the instructions, m[0] and m[1] as the first call had them, then every unit
    // tagged in order: the model's text cleaned of tag imitations only, the tool output
    // with every control character as it ran.
    let head = |body: &Value| body["messages"].as_array().unwrap()[..3].to_vec();
    assert_eq!(head(&sent), head(&first));
    let shown: Vec<(u32, &str)> = sent["messages"].as_array().unwrap()[3..]
        .iter()
        .filter_map(|message| message["content"].as_str())
        .map(split_tag)
        .collect();
    let cleaned = strip_tag_imitations(IMITATION);
    let output = control_output();
    assert_eq!(
        shown,
        [
            (1, "Tidy the repository."),
            (2, &*cleaned),
            (3, "Run the build."),
            (4, &*output)
        ]
    );
    let stored = stored_log(&proxy);
    assert_eq!(stored, conversation(&body));

    // A lone surrogate in the next tool output: refused whole, in OpenAI's shape.
    messages.push(json!({"role": "assistant", "content": "ok"}));
    messages.push(json!({"role": "user", "content": "Now the log."}));
    let body = chat_request(&messages)
        .to_string()
        .replace("Now the log.", "\\ud800");
    let reply = post_chat(&proxy, body).await;
    assert_openai_error(&reply, 400, "invalid_request_error");
    assert_eq!(upstream.seen().len(), 2);
    assert_eq!(stored_log(&proxy), stored);
    proxy.shutdown().await;
}

/// Sends one Chat conversation whose assistant called a tool with `arguments` through a new
/// proxy, and checks the call goes up as the client wrote it and the stored log is the
/// conversation sent (every chain verifying).
async fn tool_call_goes_up_as_written(upstream: &Upstream, arguments: &str) {
    let proxy = Proxy::start(&upstream.url()).await;
    let call = json!({"id": "call_1", "type": "function",
        "function": {"name": "bash", "arguments": arguments}});
    let messages = [
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "Run the build."}),
        json!({"role": "assistant", "tool_calls": [call]}),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "done"}),
    ];
    let body = chat_request(&messages).to_string().into_bytes();
    let reply = post_chat(&proxy, body.clone()).await;
    assert_eq!(reply.status, 200, "{arguments:.40}: {}", reply.text());
    let sent = upstream.seen().pop().unwrap().json();
    let calls = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|message| message.get("tool_calls"))
        .unwrap();
    assert_eq!(calls[0], call, "{arguments:.40}");
    assert_eq!(stored_log(&proxy), conversation(&body), "{arguments:.40}");
    proxy.shutdown().await;
}

/// Chat tool-call arguments are JSON text, parsed apart from the body and so not bounded by
/// its nesting. Whatever their depth, the call is answered, its arguments go up as the
/// client sent them, and the stored log reads back (a parsed input nested deeper than the
/// store can read was once written into a row no read could decode).
#[tokio::test]
async fn chat_tool_arguments_nested_at_any_depth_are_sent_as_written_and_stored_readable() {
    let upstream = Upstream::replying(|_, _| json_response(200, &chat_answer("ok"))).await;
    for depth in [MAX_INPUT_NESTING, MAX_INPUT_NESTING + 1, 127, 128, 10_000] {
        let arguments = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        tool_call_goes_up_as_written(&upstream, &arguments).await;
    }
}

/// Arguments that are JSON of any kind but an object go up as the client wrote them: a JSON
/// string literal (`"ls"`, quotes included) was once read as the string inside it and sent
/// back without its quotes.
#[tokio::test]
async fn chat_tool_arguments_of_every_json_kind_are_sent_as_written() {
    let upstream = Upstream::replying(|_, _| json_response(200, &chat_answer("ok"))).await;
    for arguments in [
        r#""ls""#,
        r#""{\"cmd\":\"ls\"}""#,
        "\"\"",
        "42",
        "null",
        "[]",
        "true",
    ] {
        tool_call_goes_up_as_written(&upstream, arguments).await;
    }
}

/// The hundred-client race on Chat, where the client names no session and the session is
/// found by the conversation's hash chain: a new conversation and its next turn, each sent
/// by a hundred clients at once, are stored once in one session.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_chat_request_sent_a_hundred_times_at_once_is_stored_once() {
    let upstream = Upstream::replying(|_, _| json_response(200, &chat_answer("ok"))).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let mut messages = vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "Start."}),
    ];
    for round in 0..2 {
        if round == 1 {
            messages.push(json!({"role": "assistant", "content": "ok"}));
            messages.push(json!({"role": "user", "content": "Next."}));
        }
        let body = chat_request(&messages).to_string();
        let clients = (0..100).map(|_| post_chat(&proxy, body.clone()));
        for reply in futures_util::future::join_all(clients).await {
            assert_eq!(reply.status, 200, "round {round}: {}", reply.text());
            assert_eq!(reply.json(), chat_answer("ok"));
        }
        let seen = upstream.seen();
        assert_eq!(seen.len(), 100 * (round + 1));
        let sent = &seen[100 * round..];
        assert!(
            sent.iter().all(|call| call.body == sent[0].body),
            "round {round}"
        );
        assert_eq!(stored_log(&proxy), conversation(body.as_bytes()));
    }
    proxy.shutdown().await;
}
