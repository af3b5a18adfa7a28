//! Hostile input, round two, through the real proxy: what a prompt names cannot hang a
//! request, an implausible limit from the provider is not kept, and the proxy's own headers
//! and addresses stay on its side.

use std::process::Command;
use std::time::Duration;

use axum::http::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{
    MODEL, Proxy, Reply, Upstream, anthropic_message, closed_port_url, json_response, send,
};

const SESSION: &str = "0c6b2c7e-5d8a-4a51-9a43-2f7d3e1b9c60";

pub fn body(system: &str, text: &str) -> Value {
    json!({
        "model": MODEL,
        "max_tokens": 256,
        "system": system,
        "messages": [{"role": "user", "content": text}],
    })
}

pub async fn post(proxy: &Proxy, extra: &[(&str, &str)], body: &Value) -> Reply {
    let mut headers = vec![
        ("content-type", "application/json"),
        ("x-api-key", "sk-ant-test-bounds"),
    ];
    headers.extend_from_slice(extra);
    send(
        Method::POST,
        &proxy.url("/v1/messages"),
        &headers,
        body.to_string(),
    )
    .await
}

/// A working directory whose repository `HEAD` is a FIFO: `git` reading it waited forever,
/// and so did the request.
#[tokio::test]
async fn a_directory_with_a_fifo_head_does_not_hold_the_request() {
    let upstream = Upstream::replying(|_, _| json_response(200, &anthropic_message("ok"))).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let made = Command::new("mkfifo")
        .arg(dir.path().join(".git/HEAD"))
        .status()
        .unwrap();
    assert!(made.success());
    let system = format!(
        "You are Claude Code.\nPrimary working directory: {}\n",
        dir.path().display()
    );
    for turn in 0..2 {
        let reply = tokio::time::timeout(
            Duration::from_secs(30),
            post(&proxy, &[], &body(&system, &format!("turn {turn}"))),
        )
        .await
        .expect("the request was answered");
        assert_eq!(reply.status.as_u16(), 200, "{}", reply.text());
    }
    let sessions = proxy.sessions();
    assert!(
        sessions.iter().all(|session| session
            .project
            .as_ref()
            .is_some_and(|p| p.as_str().starts_with("path:"))),
        "{sessions:?}"
    );
}

/// "prompt is too long: 999999 tokens > 10 maximum" once refused every later request of
/// its session, restarts included: a limit below the system prompt, or below any model's
/// window, is logged and not kept.
#[tokio::test]
async fn an_implausible_overflow_limit_is_not_kept() {
    let upstream = Upstream::replying(|_, index| {
        if index == 0 {
            json_response(
                400,
                &json!({"type": "error", "error": {"type": "invalid_request_error",
                    "message": "prompt is too long: 999999 tokens > 10 maximum"}}),
            )
        } else {
            json_response(200, &anthropic_message("fine"))
        }
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    let session = [("x-magic-context-session", SESSION)];
    let first = post(&proxy, &session, &body("You are a coding agent.", "hello")).await;
    assert_eq!(first.status.as_u16(), 200, "{}", first.text());
    let mut messages = body("You are a coding agent.", "hello");
    messages["messages"].as_array_mut().unwrap().extend([
        json!({"role": "assistant", "content": "fine"}),
        json!({"role": "user", "content": "next"}),
    ]);
    let second = post(&proxy, &session, &messages).await;
    assert_eq!(second.status.as_u16(), 200, "{}", second.text());
    let state = proxy
        .store()
        .read(|tx| tx.engine_state(&mc_core::SessionId::new(SESSION).unwrap()))
        .unwrap()
        .unwrap();
    let state: Value = serde_json::from_str(&state).unwrap();
    assert_eq!(state["proven_window"], Value::Null, "{state}");
    assert_eq!(upstream.seen().len(), 3, "one retry, then each call once");
}

/// The proxy's own headers are for the proxy; `Expect` was answered by it.
#[tokio::test]
async fn the_proxy_s_own_headers_do_not_go_upstream() {
    let upstream = Upstream::replying(|_, _| json_response(200, &anthropic_message("ok"))).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let reply = post(
        &proxy,
        &[
            ("x-magic-context-session", SESSION),
            ("x-magic-context-project", "bounds-project"),
            ("expect", "100-continue"),
        ],
        &body("You are a coding agent.", "hello"),
    )
    .await;
    assert_eq!(reply.status.as_u16(), 200, "{}", reply.text());
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1);
    for name in [
        "x-magic-context-session",
        "x-magic-context-project",
        "expect",
    ] {
        assert_eq!(seen[0].header(name), None, "{name} went upstream");
    }
    assert_eq!(seen[0].header("x-api-key"), Some("sk-ant-test-bounds"));
}

/// `OPTIONS *` asks the server what it supports; it was forwarded as a URL built from the
/// base and `*` ("builder error: invalid port number").
#[tokio::test]
async fn options_star_is_answered_by_the_proxy() {
    let upstream = Upstream::replying(|_, _| json_response(200, &json!({}))).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let addr = proxy.url("").trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    stream
        .write_all(
            format!("OPTIONS * HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_string(&mut answer))
        .await
        .unwrap()
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 204"), "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("allow: get, post, options"),
        "{answer}"
    );
    assert!(upstream.seen().is_empty());
}

/// A connection error names the provider, not the address the proxy forwards to.
#[tokio::test]
async fn an_unreachable_upstream_is_not_named_to_the_client() {
    let upstream = closed_port_url();
    let proxy = Proxy::start(&upstream).await;
    let reply = post(&proxy, &[], &body("You are a coding agent.", "hello")).await;
    assert_eq!(reply.status.as_u16(), 502, "{}", reply.text());
    let address = upstream.trim_start_matches("http://");
    assert!(!reply.text().contains(address), "{}", reply.text());
    assert!(
        reply.text().contains("could not connect to the upstream"),
        "{}",
        reply.text()
    );
    let forwarded = send(Method::GET, &proxy.url("/v1/models"), &[], "").await;
    assert_eq!(forwarded.status.as_u16(), 502, "{}", forwarded.text());
    assert!(!forwarded.text().contains(address), "{}", forwarded.text());
}

/// A proxy whose clients may stay silent one second and open four connections each.
async fn strict_proxy(upstream: &Upstream) -> Proxy {
    let mut settings = crate::support::settings(&upstream.url());
    settings.client_limits = mc_proxy::ClientLimits {
        idle_timeout: Duration::from_secs(1),
        max_per_address: 4,
    };
    Proxy::start_with(settings).await
}

/// Reads what the proxy sends until it closes the connection, or `None` if it keeps it
/// open past `wait`.
async fn read_until_closed(stream: &mut tokio::net::TcpStream, wait: Duration) -> Option<String> {
    let mut answer = Vec::new();
    match tokio::time::timeout(wait, stream.read_to_end(&mut answer)).await {
        Ok(_) => Some(String::from_utf8_lossy(&answer).into_owned()),
        Err(_) => None,
    }
}

/// Partial headers, no bytes at all, and a body shorter than its `Content-Length` each held
/// a connection forever; each is now closed or answered when the client has been silent for
/// the idle timeout, and the proxy serves others meanwhile.
#[tokio::test]
async fn silent_and_slow_clients_are_let_go() {
    let upstream = Upstream::replying(|_, _| json_response(200, &anthropic_message("ok"))).await;
    let proxy = strict_proxy(&upstream).await;
    let addr = proxy.url("").trim_start_matches("http://").to_owned();

    let mut partial = tokio::net::TcpStream::connect(&addr).await.unwrap();
    partial
        .write_all(b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
        .await
        .unwrap();
    let mut silent = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut short = tokio::net::TcpStream::connect(&addr).await.unwrap();
    short
        .write_all(
            format!(
                "POST /v1/messages HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
                 x-api-key: sk-ant-test\r\nContent-Length: 5000\r\n\r\n{{\"model\":"
            )
            .as_bytes(),
        )
        .await
        .unwrap();

    // Meanwhile a well-behaved client is served.
    let reply = post(&proxy, &[], &body("You are a coding agent.", "hello")).await;
    assert_eq!(reply.status.as_u16(), 200, "{}", reply.text());

    let wait = Duration::from_secs(10);
    assert!(
        read_until_closed(&mut partial, wait).await.is_some(),
        "partial headers held"
    );
    assert!(
        read_until_closed(&mut silent, wait).await.is_some(),
        "a silent connection held"
    );
    let answer = read_until_closed(&mut short, wait)
        .await
        .expect("a short body held");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive within"), "{answer}");
    assert_eq!(
        upstream.seen().len(),
        1,
        "only the whole request went upstream"
    );
}

/// One address holds at most its share of connections; the next is closed at once, and a
/// slot frees when a connection ends.
#[tokio::test]
async fn one_address_holds_at_most_its_share_of_connections() {
    let upstream = Upstream::replying(|_, _| json_response(200, &anthropic_message("ok"))).await;
    let proxy = strict_proxy(&upstream).await;
    let addr = proxy.url("").trim_start_matches("http://").to_owned();
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
    }
    // Let the proxy accept the four before the fifth arrives.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut extra = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let closed = read_until_closed(&mut extra, Duration::from_millis(800)).await;
    assert_eq!(
        closed.as_deref(),
        Some(""),
        "the fifth connection is closed unanswered"
    );
    drop(held);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let reply = post(&proxy, &[], &body("You are a coding agent.", "hello")).await;
    assert_eq!(reply.status.as_u16(), 200, "{}", reply.text());
}

/// A client may name its session `x~` (or `x~1`): it is a session of its own, not a fork of
/// `x`, and `x` is not filed under it; a fork of `x` skips a name a client already holds.
#[tokio::test]
async fn client_ids_with_the_branch_separator_are_their_own_sessions() {
    let upstream = Upstream::replying(|_, _| json_response(200, &anthropic_message("ok"))).await;
    let proxy = Proxy::start(&upstream.url()).await;
    for id in ["x~", "x~1"] {
        let reply = post(
            &proxy,
            &[("x-magic-context-session", id)],
            &body("You are a coding agent.", &format!("I am {id}")),
        )
        .await;
        assert_eq!(reply.status.as_u16(), 200, "{}", reply.text());
    }
    let reply = post(
        &proxy,
        &[("x-magic-context-session", "x")],
        &body("You are a coding agent.", "I am x"),
    )
    .await;
    assert_eq!(reply.status.as_u16(), 200, "{}", reply.text());
    let mut ids = proxy.session_ids();
    ids.sort();
    assert_eq!(ids, ["x", "x~", "x~1"]);
    assert!(
        proxy
            .sessions()
            .iter()
            .all(|session| session.fork.is_none())
    );
    // An edit of x's first message forks x: not into the name x~1 holds.
    let reply = post(
        &proxy,
        &[("x-magic-context-session", "x")],
        &body("You are a coding agent.", "I am x, edited"),
    )
    .await;
    assert_eq!(reply.status.as_u16(), 200, "{}", reply.text());
    let texts = |id: &str| -> Vec<String> {
        proxy
            .messages(id)
            .iter()
            .map(|row| format!("{:?}", row.message.parts))
            .collect()
    };
    assert!(texts("x~1")[0].contains("I am x~1"), "{:?}", texts("x~1"));
    let forks: Vec<_> = proxy
        .sessions()
        .into_iter()
        .filter(|session| session.fork.is_some())
        .map(|session| session.id.as_str().to_owned())
        .collect();
    assert_eq!(forks, ["x~2"]);
}

/// An `overloaded_error` sent with HTTP 200 reached the client as a 502 "answer broke off":
/// it now arrives as the provider's error, under the status its type means (529, which
/// clients retry), whether or not the proxy serves its tools on the call.
#[tokio::test]
async fn a_provider_error_sent_with_200_reaches_the_client_as_that_error() {
    let overloaded = json!({"type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let upstream = Upstream::replying({
        let overloaded = overloaded.clone();
        move |_, _| json_response(200, &overloaded)
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    for (session, extra) in [
        ("with-tools", None),
        ("claude-code", Some(("x-claude-code-session-id", SESSION))),
    ] {
        let mut headers = vec![("x-magic-context-session", session)];
        headers.extend(extra);
        let reply = post(&proxy, &headers, &body("You are a coding agent.", "hello")).await;
        assert_eq!(reply.status.as_u16(), 529, "{session}: {}", reply.text());
        assert_eq!(reply.json(), overloaded, "{session}");
    }
    let calls = proxy.calls("with-tools", 1).await;
    assert_eq!(calls[0].status, 529);
}
