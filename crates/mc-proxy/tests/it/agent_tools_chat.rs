//! The agent tools served inside the proxy on the OpenAI Chat Completions wire.

use axum::body::Body;
use axum::http::{Method, Response};
use mc_core::config::{Config, ToolsMode};
use serde_json::{Value, json};

use crate::support::*;

/// Where the client's conversation starts upstream: after its instruction, our guidance,
/// and the engine's m[0] and m[1].
pub const HEAD: usize = 4;

pub async fn proxy(upstream: &Upstream) -> Proxy {
    let mut config = Config::default();
    config.historian.enabled = false;
    config.tools.mode = ToolsMode::Proxy;
    Proxy::start_with_config(settings(&upstream.url()), config).await
}

pub fn request(turns: &[Value], stream: bool) -> Value {
    let mut messages =
        vec![json!({"role": "system", "content": "You are a careful coding agent."})];
    messages.extend_from_slice(turns);
    json!({
        "model": "gpt-4o",
        "stream": stream,
        "messages": messages,
        "tools": [{"type": "function", "function": {"name": "read_file", "description": "Reads a file.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}],
    })
}

pub async fn post_chat(proxy: &Proxy, body: &Value) -> Reply {
    send(
        Method::POST,
        &proxy.url("/v1/chat/completions"),
        &[
            ("content-type", "application/json"),
            ("x-magic-context-project", "proj-chat"),
        ],
        body.to_string(),
    )
    .await
}

pub fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}})
}

/// An answer with `content` and `calls`.
pub fn answer(content: Option<&str>, calls: Vec<Value>) -> Value {
    let mut message = json!({"role": "assistant", "content": content});
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    if !calls.is_empty() {
        message["tool_calls"] = json!(calls);
    }
    json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37}})
}

/// `answer` as a stream of chunks, with the usage chunk when asked.
pub fn stream_of(answer: &Value, usage: bool) -> String {
    let message = &answer["choices"][0]["message"];
    let id = &answer["id"];
    let chunk = |delta: Value, finish: Value| {
        let data = json!({"id": id, "object": "chat.completion.chunk", "model": "gpt-4o",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {data}\n\n")
    };
    let mut out = chunk(
        json!({"role": "assistant", "content": message["content"]}),
        Value::Null,
    );
    for (index, call) in message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let mut delta = call.clone();
        delta["index"] = json!(index);
        out += &chunk(json!({"tool_calls": [delta]}), Value::Null);
    }
    out += &chunk(json!({}), answer["choices"][0]["finish_reason"].clone());
    if usage {
        out += &format!(
            "data: {}\n\n",
            json!({"id": id, "object": "chat.completion.chunk", "choices": [], "usage": answer["usage"]})
        );
    }
    out + "data: [DONE]\n\n"
}

pub async fn scripted(answers: Vec<Value>) -> Upstream {
    Upstream::replying(move |seen: &Seen, index| -> Response<Body> {
        let answer = &answers[index.min(answers.len() - 1)];
        let sent = seen.json();
        if sent["stream"] == json!(true) {
            sse_response(stream_of(
                answer,
                sent["stream_options"]["include_usage"] == json!(true),
            ))
        } else {
            json_response(200, answer)
        }
    })
    .await
}

/// The assistant message a client reads back, from JSON or from its stream.
fn received(reply: &Reply) -> Value {
    if !reply.text().starts_with("data:") {
        return reply.json()["choices"][0]["message"].clone();
    }
    let mut content = String::new();
    let mut calls: Vec<Value> = Vec::new();
    for (_, event) in sse_events(&reply.body) {
        assert!(
            event.get("usage").is_none_or(Value::is_null),
            "the client did not ask for usage"
        );
        for choice in event["choices"].as_array().into_iter().flatten() {
            let delta = &choice["delta"];
            content += delta["content"].as_str().unwrap_or("");
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                let index = call["index"].as_u64().unwrap() as usize;
                assert_eq!(index, calls.len(), "call indexes are contiguous");
                let mut call = call.clone();
                call.as_object_mut().unwrap().remove("index");
                calls.push(call);
            }
        }
    }
    json!({"content": content, "tool_calls": calls})
}

fn names(calls: &Value) -> Vec<String> {
    calls
        .as_array()
        .into_iter()
        .flatten()
        .map(|call| call["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn hidden_rounds(stream: bool) {
    let upstream = scripted(vec![
        answer(None, vec![call("call_w", "ctx_memory", json!({"action": "write", "category": "NAMING", "content": "Crates are kebab-case."}))]),
        answer(None, vec![call("call_s", "ctx_search", json!({"query": "kebab"}))]),
        answer(Some("Kebab-case."), vec![]),
        answer(Some("You are welcome."), vec![]),
    ])
    .await;
    let proxy = proxy(&upstream).await;
    let first = [json!({"role": "user", "content": "How are crates named?"})];
    let reply = post_chat(&proxy, &request(&first, stream)).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let got = received(&reply);
    assert_eq!(got["content"], "Kebab-case.");
    assert!(names(&got["tool_calls"]).is_empty());

    let seen = upstream.seen();
    assert_eq!(seen.len(), 3);
    let third = seen[2].json();
    let tools: Vec<String> = third["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        tools,
        [
            "read_file",
            "ctx_reduce",
            "ctx_expand",
            "ctx_note",
            "ctx_memory",
            "ctx_search"
        ]
    );
    assert!(
        third["messages"][1]["content"]
            .as_str()
            .unwrap()
            .starts_with("## Context tools")
    );
    let messages = third["messages"].as_array().unwrap();
    assert_eq!(messages.len(), HEAD + 5, "{messages:?}");
    assert_eq!(names(&messages[HEAD + 1]["tool_calls"]), ["ctx_memory"]);
    assert_eq!(messages[HEAD + 2]["tool_call_id"], "call_w");
    assert!(
        messages[HEAD + 4]
            .to_string()
            .contains("Crates are kebab-case.")
    );

    let second = [
        first[0].clone(),
        json!({"role": "assistant", "content": "Kebab-case."}),
        json!({"role": "user", "content": "Thanks."}),
    ];
    post_chat(&proxy, &request(&second, stream)).await;
    let seen = upstream.seen();
    assert_eq!(seen.len(), 4);
    let later = seen[3].json();
    for at in HEAD + 1..HEAD + 5 {
        assert_eq!(later["messages"][at], messages[at]);
        let bytes = messages[at].to_string();
        assert!(
            seen[3]
                .body
                .windows(bytes.len())
                .any(|window| window == bytes.as_bytes()),
            "message {at} repeated byte for byte"
        );
    }
    proxy.shutdown().await;
}

#[tokio::test]
async fn chat_hidden_rounds_reach_the_client_as_one_answer() {
    hidden_rounds(false).await;
}

#[tokio::test]
async fn chat_hidden_rounds_reach_a_streaming_client_as_one_stream() {
    hidden_rounds(true).await;
}

async fn mixed(stream: bool) {
    let upstream = scripted(vec![
        answer(
            Some("Noting, then reading."),
            vec![
                call(
                    "call_ours",
                    "ctx_note",
                    json!({"action": "write", "content": "Check the README."}),
                ),
                call("call_client", "read_file", json!({"path": "a.rs"})),
            ],
        ),
        answer(Some("Read it."), vec![]),
    ])
    .await;
    let proxy = proxy(&upstream).await;
    let first = [json!({"role": "user", "content": "Read a.rs."})];
    let reply = post_chat(&proxy, &request(&first, stream)).await;
    let got = received(&reply);
    assert_eq!(names(&got["tool_calls"]), ["read_file"]);
    assert!(!reply.text().contains("ctx_note"));

    let client_turn = json!({"role": "assistant", "content": "Noting, then reading.", "tool_calls": [call("call_client", "read_file", json!({"path": "a.rs"}))]});
    let result = json!({"role": "tool", "tool_call_id": "call_client", "content": "fn main() {}"});
    post_chat(
        &proxy,
        &request(&[first[0].clone(), client_turn, result], stream),
    )
    .await;
    let sent = upstream.seen()[1].json();
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(
        names(&messages[HEAD + 1]["tool_calls"]),
        ["ctx_note", "read_file"]
    );
    assert_eq!(messages[HEAD + 2]["tool_call_id"], "call_ours");
    assert_eq!(messages[HEAD + 3]["tool_call_id"], "call_client");
    proxy.shutdown().await;
}

#[tokio::test]
async fn a_mixed_chat_answer_shows_the_client_only_its_own_call() {
    mixed(false).await;
}

#[tokio::test]
async fn a_mixed_streamed_chat_answer_shows_the_client_only_its_own_call() {
    mixed(true).await;
}

#[tokio::test]
async fn chat_rounds_stop_at_the_bound_with_tools_refused() {
    let upstream = scripted(vec![answer(
        None,
        vec![call("call_n", "ctx_search", json!({"query": "again"}))],
    )])
    .await;
    let proxy = proxy(&upstream).await;
    for stream in [false, true] {
        let asked = json!({"role": "user", "content": format!("Search forever ({stream}).")});
        let reply = post_chat(&proxy, &request(std::slice::from_ref(&asked), stream)).await;
        let message = received(&reply);
        assert!(
            message
                .get("tool_calls")
                .is_none_or(|calls| calls.is_null() || calls == &json!([])),
            "{message}"
        );
        assert!(
            message["content"]
                .as_str()
                .is_some_and(|text| text.contains("after 8 rounds")),
            "the client reads why the answer stopped: {message}"
        );
        if !stream {
            assert_eq!(reply.json()["choices"][0]["finish_reason"], "stop");
        }
        let seen = upstream.seen();
        assert_eq!(seen.len() % 8, 0);
        assert_eq!(seen[seen.len() - 1].json()["tool_choice"], "none");
        // The client carries on with the answer it read: one session, the hidden rounds
        // spliced back in where they ran.
        let answer = json!({"role": "assistant", "content": message["content"]});
        let next = request(
            &[
                asked.clone(),
                answer,
                json!({"role": "user", "content": "Go on."}),
            ],
            stream,
        );
        post_chat(&proxy, &next).await;
        let sent = upstream.seen().last().unwrap().json();
        assert!(
            sent["messages"].to_string().contains("call_n"),
            "the hidden exchange is spliced back: {sent}"
        );
    }
    let sessions = proxy.session_ids();
    assert_eq!(
        sessions.len(),
        2,
        "one conversation each, no fork: {sessions:?}"
    );
    assert!(sessions.iter().all(|id| !id.contains('~')), "{sessions:?}");
    proxy.shutdown().await;
}

/// With the engine's compaction off the host manages the window and nothing is tagged, so
/// `ctx_reduce` (which could only refuse) is not offered, and the guidance names neither
/// tags nor drops; the same on a first request (prepared whole) and a follow-up (walked).
#[tokio::test]
async fn with_compaction_off_every_tool_but_reduce_is_offered() {
    let upstream = scripted(vec![answer(Some("Done."), vec![])]).await;
    let mut config = Config::default();
    config.historian.enabled = false;
    config.tools.mode = ToolsMode::Proxy;
    config.compaction.enabled = false;
    let proxy = Proxy::start_with_config(settings(&upstream.url()), config).await;
    let first = [json!({"role": "user", "content": "Rename the crate."})];
    let second = [
        first[0].clone(),
        json!({"role": "assistant", "content": "Done."}),
        json!({"role": "user", "content": "Now its tests."}),
    ];
    for turns in [&first[..], &second[..]] {
        let reply = post_chat(&proxy, &request(turns, false)).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    let seen = upstream.seen();
    assert_eq!(seen.len(), 2);
    for (sent, turns) in seen.iter().zip([&first[..], &second[..]]) {
        let sent = sent.json();
        // The head goes first, then the client's messages as it sent them (the head is put
        // where the decode found the message list, on the first request and the walked one).
        let guidance = json!(mc_engine::tools::HOST_COMPACTS_GUIDANCE);
        let client: Vec<&serde_json::Value> = sent["messages"].as_array().unwrap()[2..]
            .iter()
            .filter(|m| m["content"] != guidance)
            .collect();
        let sent_by_client = request(turns, false);
        let expected: Vec<&serde_json::Value> = sent_by_client["messages"]
            .as_array()
            .unwrap()
            .iter()
            .collect();
        assert_eq!(client, expected, "{sent}");
        let tools: Vec<&str> = sent["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            tools,
            [
                "read_file",
                "ctx_expand",
                "ctx_note",
                "ctx_memory",
                "ctx_search"
            ]
        );
        let messages = sent["messages"].as_array().unwrap();
        assert!(
            messages.iter().any(|m| m["content"] == guidance),
            "{messages:?}"
        );
        assert!(!sent.to_string().contains("ctx_reduce"), "{sent}");
    }
    proxy.shutdown().await;
}
