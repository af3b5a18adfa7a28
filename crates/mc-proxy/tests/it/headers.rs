//! Headers across the proxy: end-to-end headers (credentials included) pass both ways
//! unchanged, hop-by-hop headers never cross, and credentials never reach a log line.

use std::time::Duration;

use axum::http::{HeaderValue, Method};
use serde_json::json;

use crate::support::{
    Proxy, Seen, Upstream, anthropic_message, anthropic_request, closed_port_url, json_response,
    log_buffer, send, user,
};

const API_KEY: &str = "sk-ant-api03-SECRET-HDR-7f3a";
const BEARER: &str = "Bearer sk-oauth-SECRET-HDR-91c2";

/// What a client sends: credentials, provider headers, a custom header, and hop-by-hop
/// headers (including one the `Connection` header names).
fn client_headers() -> Vec<(&'static str, &'static str)> {
    vec![
        ("content-type", "application/json"),
        ("x-api-key", API_KEY),
        ("authorization", BEARER),
        ("anthropic-version", "2023-06-01"),
        ("anthropic-beta", "prompt-caching-2024-07-31"),
        ("x-custom-client", "kept as is"),
        ("user-agent", "claude-cli/2.0.0 (external, cli)"),
        ("connection", "keep-alive, x-conn-scoped"),
        ("x-conn-scoped", "only for this hop"),
        ("keep-alive", "timeout=5"),
        ("proxy-authorization", "Basic cHJveHk6U0VDUkVULUhEUg=="),
        ("te", "trailers"),
    ]
}

const END_TO_END: [&str; 6] = [
    "x-api-key",
    "authorization",
    "anthropic-version",
    "anthropic-beta",
    "x-custom-client",
    "user-agent",
];

const HOP_BY_HOP: [&str; 4] = ["x-conn-scoped", "keep-alive", "proxy-authorization", "te"];

/// An upstream that answers with a message and a mix of end-to-end and hop-by-hop headers.
async fn upstream() -> Upstream {
    Upstream::replying(|_, _| {
        let mut response = json_response(200, &anthropic_message("ok"));
        let headers = response.headers_mut();
        headers.insert("request-id", HeaderValue::from_static("req_upstream_42"));
        headers.insert(
            "anthropic-ratelimit-requests-remaining",
            HeaderValue::from_static("99"),
        );
        headers.insert("keep-alive", HeaderValue::from_static("timeout=7"));
        headers.insert("x-hop-response", HeaderValue::from_static("1"));
        headers.insert("connection", HeaderValue::from_static("x-hop-response"));
        response
    })
    .await
}

fn assert_forwarded(seen: &Seen, what: &str) {
    for (name, value) in client_headers() {
        if END_TO_END.contains(&name) {
            assert_eq!(seen.header(name), Some(value), "{what}: {name}");
        }
    }
    for name in HOP_BY_HOP {
        assert!(
            seen.header(name).is_none(),
            "{what}: {name} crossed the proxy"
        );
    }
    assert!(
        !seen
            .header("connection")
            .unwrap_or("")
            .contains("x-conn-scoped"),
        "{what}: {:?}",
        seen.headers
    );
}

#[tokio::test]
async fn end_to_end_headers_cross_and_hop_by_hop_headers_stay_behind() {
    let upstream = upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    let body = anthropic_request(&[user("hello")]).to_string();

    // Control: sent straight to the upstream, every header arrives, so their absence
    // behind the proxy is the proxy's doing.
    let direct = send(
        Method::POST,
        &format!("{}/v1/messages", upstream.url()),
        &client_headers(),
        body.clone(),
    )
    .await;
    assert_eq!(direct.status, 200);
    assert_eq!(direct.headers["x-hop-response"], "1");
    assert_eq!(direct.headers["keep-alive"], "timeout=7");
    let control = &upstream.seen()[0];
    for name in ["x-conn-scoped", "proxy-authorization", "te"] {
        assert!(control.header(name).is_some(), "control lacks {name}");
    }

    for path in ["/v1/messages", "/v1/messages/count_tokens"] {
        let reply = send(
            Method::POST,
            &proxy.url(path),
            &client_headers(),
            body.clone(),
        )
        .await;
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
        assert_eq!(reply.json(), anthropic_message("ok"), "{path}");
        assert_eq!(reply.headers["request-id"], "req_upstream_42", "{path}");
        assert_eq!(
            reply.headers["anthropic-ratelimit-requests-remaining"], "99",
            "{path}"
        );
        assert!(!reply.headers.contains_key("x-hop-response"), "{path}");
        assert!(!reply.headers.contains_key("keep-alive"), "{path}");
        let seen = upstream.seen().pop().unwrap();
        assert_eq!(seen.uri, path);
        assert_forwarded(&seen, path);
    }
    // The managed call's body goes up re-rendered, so the proxy sets its framing headers.
    let managed = &upstream.seen()[1];
    assert_eq!(managed.header("content-type"), Some("application/json"));
    assert_eq!(managed.header("accept-encoding"), Some("identity"));
    // The verbatim one goes up byte for byte.
    assert_eq!(upstream.seen()[2].body, body.as_bytes());
}

#[tokio::test]
async fn openai_bearer_reaches_the_upstream_unchanged() {
    let upstream = Upstream::replying(|_, _| {
        json_response(
            200,
            &json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}),
        )
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    let headers = [
        ("content-type", "application/json"),
        ("authorization", "Bearer sk-proj-SECRET-HDR-openai"),
        ("openai-organization", "org-test"),
    ];
    let body = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hello"}]});
    let reply = send(
        Method::POST,
        &proxy.url("/v1/chat/completions"),
        &headers,
        body.to_string(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let models = send(Method::GET, &proxy.url("/v1/models"), &headers[1..], "").await;
    assert_eq!(models.status, 200);
    let seen = upstream.seen();
    assert_eq!(seen.len(), 2);
    for request in &seen {
        assert_eq!(
            request.header("authorization"),
            Some("Bearer sk-proj-SECRET-HDR-openai")
        );
        assert_eq!(request.header("openai-organization"), Some("org-test"));
    }
    assert_eq!(seen[1].method, Method::GET);
    assert_eq!(seen[1].uri, "/v1/models");
}

/// Managed, refused, failed and verbatim calls carrying credentials: the debug log has a
/// line for the managed call, and no credential anywhere.
#[tokio::test]
async fn credentials_never_reach_the_logs() {
    let logs = log_buffer();
    let upstream = Upstream::replying(|seen, _| {
        if seen.uri.starts_with("/v1/messages/count_tokens") {
            json_response(
                500,
                &json!({"type": "error", "error": {"type": "api_error", "message": "boom"}}),
            )
        } else {
            json_response(200, &anthropic_message("ok"))
        }
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    let session = "log-check-5d1e";
    let mut headers = client_headers();
    headers.push(("x-magic-context-session", session));
    let body = anthropic_request(&[user("hello")]).to_string();
    let ok = send(
        Method::POST,
        &proxy.url("/v1/messages"),
        &headers,
        body.clone(),
    )
    .await;
    assert_eq!(ok.status, 200);
    let refused = send(
        Method::POST,
        &proxy.url("/v1/messages"),
        &headers,
        "{not json",
    )
    .await;
    assert_eq!(refused.status, 400);
    let failed = send(
        Method::POST,
        &proxy.url("/v1/messages/count_tokens"),
        &headers,
        body,
    )
    .await;
    assert_eq!(failed.status, 500);
    let unreachable = Proxy::start(&closed_port_url()).await;
    let gone = send(
        Method::POST,
        &unreachable.url("/v1/messages"),
        &headers,
        anthropic_request(&[user("hello again")]).to_string(),
    )
    .await;
    assert_eq!(gone.status, 502);

    // The ledger line is written off the request path; wait for it.
    let mut text = String::new();
    for _ in 0..100 {
        text = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
        if text.contains(&format!("session=\"{session}\"")) && text.contains("refused a model call")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        text.contains("upstream call"),
        "no ledger line was captured:\n{text}"
    );
    assert!(text.contains(session), "no line names the session:\n{text}");
    assert!(text.contains("refused a model call"), "{text}");
    assert!(
        !text.contains("SECRET-HDR"),
        "a credential was logged:\n{text}"
    );
    assert!(
        !text.contains("U0VDUkVULUhEUg"),
        "a credential was logged:\n{text}"
    );
}
