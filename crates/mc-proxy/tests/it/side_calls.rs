//! Hosts' side calls over HTTP: OpenCode's title call and Pi's compaction call go upstream
//! byte for byte, store no session and leave a ledger row without session or pass; the same
//! instruction in a request that offers tools is a conversation and stays managed.

use std::time::Duration;

use axum::http::Method;
use serde_json::{Value, json};

use crate::support::{MODEL, Proxy, Upstream, anthropic_message, json_response, send, user};

const TITLE_SYSTEM: &str = "You are a title generator. You output ONLY a thread title. Nothing else.\n\n<task>\nGenerate a brief title for the conversation.\n</task>";

async fn upstream() -> Upstream {
    Upstream::replying(|_, _| json_response(200, &anthropic_message("Echo hi"))).await
}

/// OpenCode's title call as it writes it: cache marks on the system block and on each part
/// of the one user message, no tools, its session in headers.
fn title_call() -> Value {
    json!({
        "model": MODEL, "max_tokens": 8192,
        "system": [{"type": "text", "text": TITLE_SYSTEM, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "Generate a title for this conversation:\n", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "\"Run echo hi with your bash tool, then say done.\"", "cache_control": {"type": "ephemeral"}}
        ]}]
    })
}

const OPENCODE: [(&str, &str); 3] = [
    ("content-type", "application/json"),
    ("x-session-id", "ses_side_calls_1"),
    (
        "user-agent",
        "opencode/1.18.33 ai-sdk/provider-utils/4.0.46 runtime/bun/1.3.14",
    ),
];

/// The calls the ledger holds without a session, once there are `count`, newest first.
async fn unattributed(proxy: &Proxy, count: usize) -> Vec<mc_store::CallRow> {
    let mut calls = Vec::new();
    for _ in 0..250 {
        calls = proxy.store().read(|tx| tx.unattributed_calls(10)).unwrap();
        if calls.len() >= count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(calls.len(), count, "{calls:?}");
    calls
}

#[tokio::test]
async fn a_title_call_passes_through_verbatim() {
    let upstream = upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    // Odd spacing and key order: only a verbatim forward keeps them.
    let body = format!("{}\n", serde_json::to_string_pretty(&title_call()).unwrap());
    let reply = send(
        Method::POST,
        &proxy.url("/v1/messages"),
        &OPENCODE,
        body.clone(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json(), anthropic_message("Echo hi"));

    let seen = upstream.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].body,
        body.as_bytes(),
        "the upstream body is not the client's"
    );
    assert_eq!(seen[0].header("x-session-id"), Some("ses_side_calls_1"));
    assert!(proxy.session_ids().is_empty(), "{:?}", proxy.session_ids());

    let calls = unattributed(&proxy, 1).await;
    assert_eq!(
        (
            calls[0].status,
            calls[0].pass_seq,
            calls[0].pass_kind.as_deref()
        ),
        (200, None, None)
    );
    assert_eq!(calls[0].output_tokens, Some(3), "{:?}", calls[0]);
}

#[tokio::test]
async fn pi_compaction_passes_through_verbatim() {
    let upstream = upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    let body = json!({
        "model": MODEL, "max_tokens": 13107,
        "system": [{"type": "text", "text": "You are a context summarization assistant. Read the conversation and write a structured summary.", "cache_control": {"type": "ephemeral"}}],
        "messages": [user("<conversation>\n[User]: Run echo hi\n[Assistant]: done\n</conversation>\n\nThe messages above are a conversation to summarize. Create a structured context checkpoint summary.")]
    })
    .to_string();
    let headers = [
        ("content-type", "application/json"),
        ("user-agent", "Anthropic/JS 0.91.1"),
    ];
    let reply = send(
        Method::POST,
        &proxy.url("/v1/messages"),
        &headers,
        body.clone(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(upstream.seen()[0].body, body.as_bytes());
    assert!(proxy.session_ids().is_empty(), "{:?}", proxy.session_ids());
    let calls = unattributed(&proxy, 1).await;
    assert_eq!((calls[0].status, calls[0].pass_seq), (200, None));
}

/// The title instruction in a request that offers a tool is a conversation: it gets a
/// session of its own and a pass.
#[tokio::test]
async fn a_look_alike_with_tools_is_managed() {
    let upstream = upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    let mut call = title_call();
    call["tools"] = json!([{"name": "bash", "description": "Runs a shell command.", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]);
    let body = call.to_string();
    let reply = send(
        Method::POST,
        &proxy.url("/v1/messages"),
        &OPENCODE,
        body.clone(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());

    let ids = proxy.session_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert!(ids[0].starts_with("oc-ses_side_calls_1-"), "{ids:?}");
    let calls = proxy.calls(&ids[0], 1).await;
    assert!(calls[0].pass_seq.is_some(), "{:?}", calls[0]);
    assert!(calls[0].pass_kind.is_some(), "{:?}", calls[0]);
    assert!(unattributed(&proxy, 0).await.is_empty());
}

/// OpenCode's title call on the Chat wire, streamed without asking for usage: a managed
/// call would add `stream_options`; a side call goes up exactly as sent.
#[tokio::test]
async fn a_chat_title_call_passes_through_verbatim() {
    let upstream = Upstream::replying(|_, _| {
        json_response(
            200,
            &json!({
                "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "Echo hi"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 40, "completion_tokens": 3, "total_tokens": 43}
            }),
        )
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    let body = json!({
        "model": "gpt-4o", "max_tokens": 8192, "stream": true,
        "messages": [
            {"role": "system", "content": TITLE_SYSTEM},
            {"role": "user", "content": "Generate a title for this conversation:\n"},
            {"role": "user", "content": "\"Run echo hi with your bash tool, then say done.\""}
        ]
    })
    .to_string();
    let headers = [
        ("content-type", "application/json"),
        ("authorization", "Bearer sk-openai-test"),
        ("x-session-id", "ses_side_calls_2"),
    ];
    let reply = send(
        Method::POST,
        &proxy.url("/v1/chat/completions"),
        &headers,
        body.clone(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(upstream.seen()[0].body, body.as_bytes());
    assert!(proxy.session_ids().is_empty(), "{:?}", proxy.session_ids());
    assert_eq!(unattributed(&proxy, 1).await[0].route, "openai");
}
