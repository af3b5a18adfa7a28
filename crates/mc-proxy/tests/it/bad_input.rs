//! Requests the proxy refuses or does not manage: malformed bodies, oversized bodies,
//! content encodings, and paths it forwards verbatim. A refused request reaches neither the
//! upstream nor the store.

use std::io::Write;

use axum::body::Body;
use axum::http::{HeaderValue, Method, Response, StatusCode, header};
use serde_json::{Value, json};

use crate::support::{
    Proxy, Reply, Upstream, anthropic_message, anthropic_request, json_response, send, settings,
    user,
};

async fn upstream() -> Upstream {
    Upstream::replying(|_, _| json_response(200, &anthropic_message("ok"))).await
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn deflate(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// An Anthropic-shaped error of `kind`, from the proxy itself.
pub(crate) fn assert_anthropic_error(reply: &Reply, status: u16, kind: &str) {
    assert_eq!(reply.status, status, "{}", reply.text());
    assert_eq!(reply.headers["content-type"], "application/json");
    let body = reply.json();
    assert_eq!(body["type"], "error", "{body}");
    assert_eq!(body["error"]["type"], kind, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("magic-context: "), "{message}");
    assert_eq!(body.as_object().unwrap().len(), 2, "{body}");
}

/// An OpenAI-shaped error of `kind`, from the proxy itself.
pub(crate) fn assert_openai_error(reply: &Reply, status: u16, kind: &str) {
    assert_eq!(reply.status, status, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body.as_object().unwrap().len(), 1, "{body}");
    let error = &body["error"];
    assert_eq!(error["type"], kind, "{body}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("magic-context: ")
    );
    assert!(
        error.get("code").is_some() && error.get("param").is_some(),
        "{body}"
    );
}

async fn post_raw(proxy: &Proxy, path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Reply {
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    send(Method::POST, &proxy.url(path), &all, body).await
}

#[tokio::test]
async fn refused_requests_are_provider_shaped_and_leave_no_trace() {
    let upstream = upstream().await;
    let mut small = settings(&upstream.url());
    small.max_request_bytes = 64 * 1024;
    let proxy = Proxy::start_with(small).await;
    let chat = "/v1/chat/completions";

    let reply = post_raw(&proxy, "/v1/messages", &[], b"{\"model\": ".to_vec()).await;
    assert_anthropic_error(&reply, 400, "invalid_request_error");
    let reply = post_raw(&proxy, chat, &[], b"not json at all".to_vec()).await;
    assert_openai_error(&reply, 400, "invalid_request_error");
    // JSON, but not a request.
    let wrong = json!({"model": "claude-sonnet-4-5", "messages": "hello"}).to_string();
    let reply = post_raw(&proxy, "/v1/messages", &[], wrong.into_bytes()).await;
    assert_anthropic_error(&reply, 400, "invalid_request_error");

    // Over the limit, as sent or once decompressed.
    let big = anthropic_request(&[user(&"x".repeat(100 * 1024))]).to_string();
    let reply = post_raw(&proxy, "/v1/messages", &[], big.clone().into_bytes()).await;
    assert_anthropic_error(&reply, 413, "request_too_large");
    let reply = post_raw(&proxy, chat, &[], big.clone().into_bytes()).await;
    assert_openai_error(&reply, 413, "invalid_request_error");
    let bomb = gzip(big.as_bytes());
    assert!(bomb.len() < 64 * 1024);
    let reply = post_raw(
        &proxy,
        "/v1/messages",
        &[("content-encoding", "gzip")],
        bomb,
    )
    .await;
    assert_anthropic_error(&reply, 413, "request_too_large");

    // Encodings the proxy cannot read.
    let body = anthropic_request(&[user("hello")]).to_string();
    let reply = post_raw(
        &proxy,
        "/v1/messages",
        &[("content-encoding", "br")],
        body.clone().into_bytes(),
    )
    .await;
    assert_anthropic_error(&reply, 415, "invalid_request_error");
    let reply = post_raw(
        &proxy,
        chat,
        &[("content-encoding", "zstd")],
        body.clone().into_bytes(),
    )
    .await;
    assert_openai_error(&reply, 415, "invalid_request_error");
    let reply = post_raw(
        &proxy,
        "/v1/messages",
        &[("content-encoding", "gzip")],
        body.into_bytes(),
    )
    .await;
    assert_anthropic_error(&reply, 400, "invalid_request_error");

    assert!(upstream.seen().is_empty(), "{:?}", upstream.seen());
    assert!(proxy.sessions().is_empty(), "{:?}", proxy.session_ids());
}

#[tokio::test]
async fn compressed_request_bodies_are_decoded_and_sent_up_plain() {
    let upstream = upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    let plain = anthropic_request(&[user("compressed hello")]);
    let encoded = [
        ("gzip", gzip(plain.to_string().as_bytes())),
        ("deflate", deflate(plain.to_string().as_bytes())),
    ];
    for (encoding, body) in encoded {
        let reply = post_raw(
            &proxy,
            "/v1/messages",
            &[("content-encoding", encoding)],
            body,
        )
        .await;
        assert_eq!(reply.status, 200, "{encoding}: {}", reply.text());
        assert_eq!(reply.json(), anthropic_message("ok"));
        let seen = upstream.seen().pop().unwrap();
        assert!(seen.header("content-encoding").is_none(), "{encoding}");
        let sent = seen.json();
        assert_eq!(sent["model"], plain["model"]);
        assert_eq!(sent["max_tokens"], plain["max_tokens"]);
        let texts = crate::support::message_texts(&sent);
        assert!(
            texts.iter().any(|text| text.ends_with("compressed hello")),
            "{encoding}: {texts:?}"
        );
    }
    let ids = proxy.session_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(proxy.messages(&ids[0]).len(), 1);
}

#[tokio::test]
async fn unknown_paths_are_forwarded_verbatim() {
    let upstream = Upstream::replying(|seen, _| {
        let mut response = Response::new(Body::from(format!(
            "teapot for {} {}",
            seen.method, seen.uri
        )));
        *response.status_mut() = StatusCode::IM_A_TEAPOT;
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        response
            .headers_mut()
            .insert("x-upstream-only", HeaderValue::from_static("yes"));
        response
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    // Not JSON, not UTF-8: the proxy does not look.
    let body: Vec<u8> = vec![0xff, 0x00, b'{', 0xfe, b'\n'];
    let reply = send(
        Method::PUT,
        &proxy.url("/v1/files/abc?purpose=test&x=%20y"),
        &[
            ("content-type", "application/octet-stream"),
            ("x-api-key", "sk-files"),
        ],
        body.clone(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::IM_A_TEAPOT);
    assert_eq!(
        reply.text(),
        "teapot for PUT /v1/files/abc?purpose=test&x=%20y"
    );
    assert_eq!(reply.headers["content-type"], "text/plain");
    assert_eq!(reply.headers["x-upstream-only"], "yes");
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, Method::PUT);
    assert_eq!(seen[0].uri, "/v1/files/abc?purpose=test&x=%20y");
    assert_eq!(seen[0].body, body);
    assert_eq!(
        seen[0].header("content-type"),
        Some("application/octet-stream")
    );

    // A managed path with another method is not a model call either (a CORS preflight).
    let reply = send(Method::GET, &proxy.url("/v1/messages?limit=1"), &[], "").await;
    assert_eq!(reply.status, StatusCode::IM_A_TEAPOT, "{}", reply.text());
    assert_eq!(upstream.seen()[1].uri, "/v1/messages?limit=1");
    let reply = send(Method::OPTIONS, &proxy.url("/v1/chat/completions"), &[], "").await;
    assert_eq!(reply.text(), "teapot for OPTIONS /v1/chat/completions");
    // count_tokens is forwarded whole, compressed bodies included.
    let compressed = gzip(
        anthropic_request(&[user("count me")])
            .to_string()
            .as_bytes(),
    );
    let reply = send(
        Method::POST,
        &proxy.url("/v1/messages/count_tokens"),
        &[
            ("content-type", "application/json"),
            ("content-encoding", "gzip"),
        ],
        compressed.clone(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::IM_A_TEAPOT);
    let seen = upstream.seen().pop().unwrap();
    assert_eq!(seen.body, compressed);
    assert_eq!(seen.header("content-encoding"), Some("gzip"));
    assert!(proxy.sessions().is_empty(), "{:?}", proxy.session_ids());
}

#[tokio::test]
async fn an_upstream_error_reaches_the_client_as_sent() {
    let error =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let answer = error.clone();
    let upstream = Upstream::replying(move |_, _| {
        let mut response = json_response(529, &answer);
        response
            .headers_mut()
            .insert("request-id", HeaderValue::from_static("req_529"));
        response
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    let reply = send(
        Method::POST,
        &proxy.url("/v1/messages"),
        &[("content-type", "application/json")],
        anthropic_request(&[user("hello")]).to_string(),
    )
    .await;
    assert_eq!(reply.status.as_u16(), 529);
    assert_eq!(reply.json(), error);
    assert_eq!(reply.headers["request-id"], "req_529");
    assert_eq!(
        upstream.seen().len(),
        1,
        "a non-overflow error is not retried"
    );
    let _: Value = upstream.seen()[0].json();
}

/// The proxy's own limit governs, not the web framework's default (2 MB): agents send
/// multi-megabyte requests (images, long sessions).
#[tokio::test]
async fn bodies_up_to_the_configured_limit_are_accepted() {
    let upstream = upstream().await;
    let mut limited = settings(&upstream.url());
    limited.max_request_bytes = 4 << 20;
    let proxy = Proxy::start_with(limited).await;
    let mut body = anthropic_request(&[user("hello")]);
    // An unknown top-level field travels up untouched (and costs no token counting).
    body["client_blob"] = json!("b".repeat(3 << 20));
    let bytes = body.to_string().into_bytes();
    assert!(bytes.len() > 3 << 20);
    let reply = post_raw(&proxy, "/v1/messages", &[], bytes).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let seen = upstream.seen().pop().unwrap();
    assert_eq!(seen.json()["client_blob"], body["client_blob"]);
}
