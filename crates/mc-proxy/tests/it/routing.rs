//! Which upstream each path goes to when the two providers live at different URLs.

use axum::http::Method;
use serde_json::json;

use crate::support::{
    Proxy, Upstream, anthropic_message, anthropic_request, json_response, send, settings, user,
};

#[tokio::test]
async fn each_path_goes_to_its_providers_upstream() {
    let anthropic =
        Upstream::replying(|_, _| json_response(200, &anthropic_message("from anthropic"))).await;
    let openai = Upstream::replying(|_, _| {
        json_response(200, &json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "from openai"}, "finish_reason": "stop"}]}))
    })
    .await;
    let mut both = settings(&anthropic.url());
    // A trailing slash on a base URL is allowed.
    both.upstream_openai = format!("{}/", openai.url());
    let proxy = Proxy::start_with(both).await;
    let anthropic_body = anthropic_request(&[user("hello")]).to_string();
    let chat_body =
        json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hello"}]}).to_string();
    let json_type = ("content-type", "application/json");
    let calls = [
        (
            Method::POST,
            "/v1/messages?beta=true",
            vec![json_type],
            anthropic_body.clone(),
        ),
        (
            Method::POST,
            "/v1/messages/count_tokens?beta=true",
            vec![json_type],
            anthropic_body,
        ),
        (
            Method::GET,
            "/v1/models",
            vec![("x-api-key", "sk-ant")],
            String::new(),
        ),
        (
            Method::POST,
            "/v1/chat/completions",
            vec![json_type],
            chat_body,
        ),
        (
            Method::GET,
            "/v1/models",
            vec![("authorization", "Bearer sk-openai")],
            String::new(),
        ),
        (
            Method::POST,
            "/v1/embeddings",
            vec![json_type],
            "{}".to_owned(),
        ),
        (
            Method::POST,
            "/v1/responses",
            vec![json_type],
            json!({"model": "gpt-4o", "input": "hello"}).to_string(),
        ),
    ];
    for (method, path, headers, body) in calls {
        let reply = send(method, &proxy.url(path), &headers, body).await;
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
    }
    let paths = |upstream: &Upstream| -> Vec<String> {
        upstream.seen().into_iter().map(|seen| seen.uri).collect()
    };
    assert_eq!(
        paths(&anthropic),
        [
            "/v1/messages?beta=true",
            "/v1/messages/count_tokens?beta=true",
            "/v1/models"
        ]
    );
    assert_eq!(
        paths(&openai),
        [
            "/v1/chat/completions",
            "/v1/models",
            "/v1/embeddings",
            "/v1/responses"
        ]
    );
}

/// `GET /_magic-context/health` is answered by the proxy itself (never forwarded), naming the
/// service and whether the store is open, so `run` and `doctor` can tell this proxy from
/// another server on the port.
#[tokio::test]
async fn the_health_route_names_the_proxy_and_never_reaches_the_upstream() {
    let upstream =
        Upstream::replying(|_, _| json_response(200, &json!({"service": "upstream"}))).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let reply = send(Method::GET, &proxy.url("/_magic-context/health"), &[], "").await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let answer: serde_json::Value = serde_json::from_str(&reply.text()).unwrap();
    assert_eq!(
        answer,
        json!({"service": "magic-context", "version": env!("CARGO_PKG_VERSION"), "store": "ok"})
    );
    assert!(upstream.seen().is_empty());

    let broken = Proxy::without_store(settings(&upstream.url()), "disk full").await;
    let reply = send(Method::GET, &broken.url("/_magic-context/health"), &[], "").await;
    let answer: serde_json::Value = serde_json::from_str(&reply.text()).unwrap();
    assert_eq!(answer["store"], "unavailable");
    assert!(upstream.seen().is_empty());
}

/// A WebSocket upgrade (Codex's built-in OpenAI provider opens each session with one on
/// `GET /v1/responses`) is answered `426` by the proxy, never forwarded: clients read that
/// status as "use HTTP" and fall back at once. The body is shaped for the path's provider.
#[tokio::test]
async fn a_websocket_upgrade_is_answered_426_and_never_forwarded() {
    let upstream = Upstream::replying(|_, _| json_response(404, &json!({"error": "no"}))).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let upgrade = [
        ("connection", "Upgrade"),
        ("upgrade", "websocket"),
        ("sec-websocket-version", "13"),
        ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ("openai-beta", "responses_websockets=2026-02-06"),
    ];
    let reply = send(Method::GET, &proxy.url("/v1/responses"), &upgrade, "").await;
    assert_eq!(reply.status, 426, "{}", reply.text());
    let error = &reply.json()["error"];
    assert_eq!(error["type"], "invalid_request_error");
    assert!(
        error["message"].as_str().unwrap().contains("HTTP only"),
        "{error}"
    );
    let reply = send(Method::GET, &proxy.url("/v1/messages"), &upgrade, "").await;
    assert_eq!(reply.status, 426);
    assert_eq!(reply.json()["type"], "error");
    assert!(upstream.seen().is_empty(), "{:?}", upstream.seen());

    // The same path without the upgrade is still forwarded verbatim.
    let reply = send(Method::GET, &proxy.url("/v1/responses"), &[], "").await;
    assert_eq!(reply.status, 404);
    assert_eq!(upstream.seen().len(), 1);
}
