//! DESIGN §7's failure rules over HTTP: a store that cannot be opened refuses managed calls
//! (and only those), an upstream that cannot be reached or stays silent gets a
//! provider-shaped 502 or 504, a stream that breaks mid-way ends with an `error` event, and a
//! client that goes away cancels the upstream call.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::Method;
use futures_util::{StreamExt, stream};
use serde_json::{Value, json};

use crate::support::{
    Proxy, Reply, Upstream, anthropic_message, anthropic_request, anthropic_stream_head,
    closed_port_url, json_response, send, settings, sse_events, sse_response, user,
};

fn chat_request(stream: bool) -> Value {
    json!({"model": "gpt-4o", "stream": stream, "messages": [{"role": "user", "content": "hello"}]})
}

async fn post_anthropic(proxy: &Proxy, body: &Value) -> Reply {
    send(
        Method::POST,
        &proxy.url("/v1/messages"),
        &[
            ("content-type", "application/json"),
            ("x-api-key", "sk-ant-fail"),
        ],
        body.to_string(),
    )
    .await
}

async fn post_chat(proxy: &Proxy, body: &Value) -> Reply {
    send(
        Method::POST,
        &proxy.url("/v1/chat/completions"),
        &[
            ("content-type", "application/json"),
            ("authorization", "Bearer sk-fail"),
        ],
        body.to_string(),
    )
    .await
}

fn proxy_error_message(reply: &Reply) -> String {
    let body = reply.json();
    body["error"]["message"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn without_a_store_managed_calls_are_refused_and_passthrough_still_works() {
    let upstream =
        Upstream::replying(|seen, _| json_response(200, &json!({"data": [], "path": seen.uri})))
            .await;
    let proxy = Proxy::without_store(
        settings(&upstream.url()),
        "the store file is locked by another process",
    )
    .await;

    let reply = post_anthropic(&proxy, &anthropic_request(&[user("hello")])).await;
    assert_eq!(reply.status, 503, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "overloaded_error");
    assert!(
        proxy_error_message(&reply).contains("the store file is locked by another process"),
        "{body}"
    );
    let reply = post_chat(&proxy, &chat_request(false)).await;
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert_eq!(reply.json()["error"]["type"], "server_error");
    assert!(
        upstream.seen().is_empty(),
        "an unmanaged prompt went upstream"
    );

    for path in ["/v1/models", "/v1/messages/count_tokens"] {
        let method = if path == "/v1/models" {
            Method::GET
        } else {
            Method::POST
        };
        let reply = send(
            method,
            &proxy.url(path),
            &[("x-api-key", "sk-ant-fail")],
            "{}",
        )
        .await;
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
        assert_eq!(reply.json()["path"], path);
    }
    assert_eq!(upstream.seen().len(), 2);
    assert!(!proxy.has_store_file());
}

#[tokio::test]
async fn an_unreachable_upstream_is_a_provider_shaped_502() {
    let proxy = Proxy::start(&closed_port_url()).await;
    let reply = post_anthropic(&proxy, &anthropic_request(&[user("hello")])).await;
    assert_eq!(reply.status, 502, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "api_error");
    assert!(
        proxy_error_message(&reply).contains("could not connect to the upstream"),
        "{body}"
    );
    let reply = post_chat(&proxy, &chat_request(true)).await;
    assert_eq!(reply.status, 502);
    assert_eq!(reply.json()["error"]["type"], "server_error");
    let reply = send(Method::GET, &proxy.url("/v1/models"), &[], "").await;
    assert_eq!(reply.status, 502);
}

#[tokio::test]
async fn an_upstream_silent_before_its_headers_is_a_504() {
    let upstream = Upstream::start(|_, _| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        json_response(200, &anthropic_message("too late"))
    })
    .await;
    let mut quick = settings(&upstream.url());
    quick.upstream_idle_timeout = Duration::from_millis(300);
    let proxy = Proxy::start_with(quick).await;
    let started = Instant::now();
    let reply = post_anthropic(&proxy, &anthropic_request(&[user("hello")])).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(reply.status, 504, "{}", reply.text());
    assert_eq!(reply.json()["error"]["type"], "api_error");
    assert!(proxy_error_message(&reply).contains("did not answer in time"));
    let reply = post_chat(&proxy, &chat_request(false)).await;
    assert_eq!(reply.status, 504, "{}", reply.text());
    assert_eq!(upstream.seen().len(), 2, "a timeout is not retried");
}

/// A streamed body: `head`, then the upstream connection breaks.
fn breaking_stream(head: Vec<String>) -> Body {
    let chunks = head
        .into_iter()
        .map(|event| Ok::<_, std::io::Error>(Bytes::from(event)));
    let broken = stream::once(async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        Err(std::io::Error::other("connection reset by the test"))
    });
    Body::from_stream(stream::iter(chunks).chain(broken))
}

#[tokio::test]
async fn a_stream_broken_mid_way_ends_with_an_error_event() {
    let head = anthropic_stream_head("Half an ans");
    let openai_head = vec![
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Half\"}}]}\n\n".to_owned(),
    ];
    let (anthropic_events, chat_events) = (head.clone(), openai_head.clone());
    let upstream = Upstream::replying(move |seen, _| {
        if seen.uri.starts_with("/v1/messages") {
            sse_response(breaking_stream(anthropic_events.clone()))
        } else {
            sse_response(breaking_stream(chat_events.clone()))
        }
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;

    let mut body = anthropic_request(&[user("hello")]);
    body["stream"] = json!(true);
    let reply = post_anthropic(&proxy, &body).await;
    assert_eq!(reply.status, 200);
    let text = reply.text();
    assert!(text.starts_with(&head.concat()), "{text}");
    let events = sse_events(&reply.body);
    assert_eq!(events.len(), head.len() + 1, "{text}");
    let (name, data) = events.last().unwrap();
    assert_eq!(name.as_deref(), Some("error"));
    assert_eq!(data["type"], "error");
    assert_eq!(data["error"]["type"], "api_error");
    assert!(
        data["error"]["message"]
            .as_str()
            .unwrap()
            .contains("mid-stream")
    );

    let reply = post_chat(&proxy, &chat_request(true)).await;
    assert_eq!(reply.status, 200);
    let text = reply.text();
    assert!(text.starts_with(&openai_head.concat()), "{text}");
    let events = sse_events(&reply.body);
    assert_eq!(events.len(), 2, "{text}");
    assert_eq!(events[1].0, None);
    assert_eq!(events[1].1["error"]["type"], "server_error");
}

/// An OpenAI stream broken in the middle of a chunk, for a client that asked for usage (so
/// no filter holds events back): the client gets the whole chunks, then the error as an
/// event of its own, not spliced into the half chunk.
#[tokio::test]
async fn an_openai_stream_broken_mid_chunk_ends_with_a_whole_error_event() {
    let head = vec![
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Half\"}}],\"usage\":null}\n\n".to_owned(),
        "data: {\"id\":\"c1\",\"object\":\"chat.compl".to_owned(),
    ];
    let events = head.clone();
    let upstream =
        Upstream::replying(move |_, _| sse_response(breaking_stream(events.clone()))).await;
    let proxy = Proxy::start(&upstream.url()).await;

    let mut body = chat_request(true);
    body["stream_options"] = json!({"include_usage": true});
    let reply = post_chat(&proxy, &body).await;
    assert_eq!(reply.status, 200);
    let events = sse_events(&reply.body);
    assert_eq!(events.len(), 2, "{}", reply.text());
    assert_eq!(events[0].1["choices"][0]["delta"]["content"], "Half");
    assert_eq!(events[1].0, None);
    assert_eq!(
        events[1].1["error"]["type"],
        "server_error",
        "{}",
        reply.text()
    );
}

#[tokio::test]
async fn an_upstream_silent_mid_stream_ends_it_with_an_error_event() {
    let head = anthropic_stream_head("Waiting");
    let events = head.clone();
    let upstream = Upstream::replying(move |_, _| {
        let chunks = events
            .clone()
            .into_iter()
            .map(|event| Ok::<_, Infallible>(Bytes::from(event)));
        sse_response(Body::from_stream(
            stream::iter(chunks).chain(stream::pending()),
        ))
    })
    .await;
    let mut quick = settings(&upstream.url());
    quick.upstream_idle_timeout = Duration::from_millis(300);
    let proxy = Proxy::start_with(quick).await;
    let mut body = anthropic_request(&[user("hello")]);
    body["stream"] = json!(true);
    let started = Instant::now();
    let reply = post_anthropic(&proxy, &body).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(reply.status, 200);
    assert!(reply.text().starts_with(&head.concat()));
    let events = sse_events(&reply.body);
    assert_eq!(
        events.last().unwrap().0.as_deref(),
        Some("error"),
        "{}",
        reply.text()
    );
}

/// Sets its flag when dropped: the upstream's body stream was dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_client_disconnect_drops_the_upstream_stream() {
    let dropped = Arc::new(AtomicBool::new(false));
    let pings = Arc::new(AtomicUsize::new(0));
    let (flag, sent) = (Arc::clone(&dropped), Arc::clone(&pings));
    let upstream = Upstream::replying(move |_, _| {
        let head = anthropic_stream_head("Streaming forever")
            .into_iter()
            .map(|event| Ok::<_, Infallible>(Bytes::from(event)));
        // Pings until someone stops listening, like a provider mid-generation.
        let guard = DropFlag(Arc::clone(&flag));
        let sent = Arc::clone(&sent);
        let pinging = stream::unfold(guard, move |guard| {
            let sent = Arc::clone(&sent);
            async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                sent.fetch_add(1, Ordering::SeqCst);
                let ping = crate::support::sse_event("ping", &json!({"type": "ping"}));
                Some((Ok(Bytes::from(ping)), guard))
            }
        });
        sse_response(Body::from_stream(stream::iter(head).chain(pinging)))
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    let mut body = anthropic_request(&[user("hello")]);
    body["stream"] = json!(true);

    let mut response = crate::support::client()
        .post(proxy.url("/v1/messages"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut received = Vec::new();
    while !String::from_utf8_lossy(&received).contains("event: ping") {
        received.extend_from_slice(&response.chunk().await.unwrap().unwrap());
    }
    assert!(String::from_utf8_lossy(&received).starts_with("event: message_start"));
    assert!(
        !dropped.load(Ordering::SeqCst),
        "dropped while the client listened"
    );
    drop(response);

    let deadline = Instant::now() + Duration::from_secs(5);
    while !dropped.load(Ordering::SeqCst) {
        assert!(
            Instant::now() < deadline,
            "the upstream stream is still running after the client left ({} pings)",
            pings.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Nothing keeps pinging into the void.
    let after = pings.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(pings.load(Ordering::SeqCst), after);
}
