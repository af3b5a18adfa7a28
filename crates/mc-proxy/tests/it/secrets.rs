//! DESIGN §7's secrets rule over HTTP: credentials pass through to the upstream, and no
//! auth header value reaches a log line (at `trace`, the HTTP crates' lines included), a
//! ledger row or the store file; an upstream error body that echoes the key, and a transport
//! error that quotes a URL's query or userinfo, are blanked before the ledger and the log.

use axum::http::Method;
use serde_json::{Value, json};

use crate::support::{
    MODEL, Proxy, Upstream, anthropic_request, closed_port_url, json_response, log_buffer, send,
    sim, tap, user,
};

/// Distinctive fake credentials; each test searches for its own marker, so tests running
/// in parallel into the same log cannot hide one another's leaks.
const ANTHROPIC_KEY: &str = "sk-ant-api03-TRACEKEY-a91f";
const OAUTH_TOKEN: &str = "sk-ant-oat01-TRACEKEY-b82e";
const OPENAI_KEY: &str = "sk-proj-TRACEKEY-c73d";

/// The captured log so far, as text.
fn logs() -> String {
    String::from_utf8_lossy(&log_buffer().lock().unwrap()).into_owned()
}

/// Whether `haystack` holds `needle` anywhere, byte for byte.
fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

fn script() -> Value {
    json!({"turns": [
        {"content": [{"type": "text", "text": "Reading the code."}]},
        {"content": [{"type": "text", "text": "Done reading."}]},
        {"content": [{"type": "text", "text": "The chat wire works too."}]},
    ], "final_text": "Nothing more."})
}

/// A streamed and a plain Anthropic call, an OpenAI call and a verbatim `count_tokens`, all
/// through the simulator with credentials, logged at `trace`: the upstream got every
/// credential, and neither the log nor the store file holds any of them.
#[tokio::test]
async fn no_auth_header_value_reaches_trace_logs_or_the_store() {
    log_buffer();
    let sim = sim(&script(), None).await;
    let (upstream, _relayed) = tap(sim.local_addr()).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let session = "secrets-trace-1f0c";
    let anthropic = [
        ("content-type", "application/json"),
        ("x-api-key", ANTHROPIC_KEY),
        ("authorization", &format!("Bearer {OAUTH_TOKEN}")),
        ("anthropic-version", "2023-06-01"),
        ("x-magic-context-session", session),
    ];
    let mut streamed = anthropic_request(&[user("read the code")]);
    streamed["stream"] = json!(true);
    let reply = send(
        Method::POST,
        &proxy.url("/v1/messages?beta=true"),
        &anthropic,
        streamed.to_string(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let plain = anthropic_request(&[
        user("read the code"),
        json!({"role": "assistant", "content": "Reading the code."}),
        user("and now?"),
    ]);
    let reply = send(
        Method::POST,
        &proxy.url("/v1/messages"),
        &anthropic,
        plain.to_string(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let reply = send(
        Method::POST,
        &proxy.url("/v1/messages/count_tokens"),
        &anthropic,
        plain.to_string(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let chat = json!({"model": "gpt-4o", "stream": true, "messages": [{"role": "user", "content": "hello"}]});
    let reply = send(
        Method::POST,
        &proxy.url("/v1/chat/completions"),
        &[
            ("content-type", "application/json"),
            ("authorization", &format!("Bearer {OPENAI_KEY}")),
            ("x-magic-context-session", "secrets-trace-chat-2b7d"),
        ],
        chat.to_string(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());

    // Not vacuous: every credential reached the upstream as sent.
    let seen = upstream.seen();
    assert_eq!(seen.len(), 4);
    assert!(
        seen[..3]
            .iter()
            .all(|s| s.header("x-api-key") == Some(ANTHROPIC_KEY))
    );
    assert_eq!(
        seen[3].header("authorization"),
        Some(format!("Bearer {OPENAI_KEY}").as_str())
    );
    proxy.calls(session, 2).await;
    proxy.calls("secrets-trace-chat-2b7d", 1).await;

    let text = logs();
    assert!(text.contains(session), "the calls were not logged:\n{text}");
    assert!(
        text.contains(" TRACE ") && (text.contains("hyper_util") || text.contains("reqwest")),
        "the HTTP crates' trace lines were not captured:\n{text}"
    );
    for key in [ANTHROPIC_KEY, OAUTH_TOKEN, OPENAI_KEY] {
        assert!(!text.contains(key), "{key} was logged:\n{text}");
    }
    let stored = proxy.stop_and_read_store_files().await;
    assert!(holds(&stored, session), "the store holds no session");
    assert!(
        !holds(&stored, "TRACEKEY"),
        "a credential is in the store file"
    );
}

/// OpenAI's 401 quotes the key it was sent: the client gets the provider's body untouched
/// (it is the client's own key), the ledger keeps the error type and a message with the key
/// blanked, and neither the log nor the store holds it.
#[tokio::test]
async fn an_error_body_echoing_the_key_is_blanked_in_the_ledger_and_the_log() {
    log_buffer();
    let key = "sk-proj-ECHOKEY-4d61e0";
    let body = json!({"error": {
        "message": format!("Incorrect API key provided: {key}. You can find your API key at https://platform.openai.com/account/api-keys."),
        "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}});
    let answer = body.clone();
    let upstream = Upstream::replying(move |_, _| json_response(401, &answer)).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let session = "secrets-echo-7a2c";
    let reply = send(
        Method::POST,
        &proxy.url("/v1/chat/completions"),
        &[
            ("content-type", "application/json"),
            ("authorization", &format!("Bearer {key}")),
            ("x-magic-context-session", session),
        ],
        json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}).to_string(),
    )
    .await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.json(), body, "the provider's body was altered");

    let calls = proxy.calls(session, 1).await;
    assert_eq!(calls[0].status, 401);
    assert_eq!(
        calls[0].error.as_deref(),
        Some(
            "invalid_request_error: Incorrect API key provided: <redacted>. You can find your API key at https://platform.openai.com/account/api-keys."
        )
    );
    let text = logs();
    assert!(text.contains(session), "{text}");
    assert!(!text.contains("ECHOKEY"), "the key was logged:\n{text}");
    let stored = proxy.stop_and_read_store_files().await;
    assert!(!holds(&stored, "ECHOKEY"), "the key is in the store file");
}

/// A connection error names the upstream, never the userinfo of its base URL or the query
/// of the client's path (where some gateways take the key): not to the client, not in the
/// ledger, not in the log.
#[tokio::test]
async fn a_connection_error_names_no_query_or_userinfo() {
    log_buffer();
    let closed = closed_port_url();
    let host = closed.trim_start_matches("http://").to_owned();
    let base = format!("http://gwuser:USERINFO-PW-3e8b@{host}");
    let proxy = Proxy::start(&base).await;
    let session = "secrets-url-5c9a";
    for path in [
        "/v1/messages?api-key=QUERYKEY-6f1d",
        "/v1/chat/completions?api-key=QUERYKEY-6f1d",
    ] {
        let body = if path.starts_with("/v1/messages") {
            anthropic_request(&[user("hello")])
        } else {
            json!({"model": MODEL, "messages": [{"role": "user", "content": "hello"}]})
        };
        let reply = send(
            Method::POST,
            &proxy.url(path),
            &[
                ("content-type", "application/json"),
                ("x-magic-context-session", session),
            ],
            body.to_string(),
        )
        .await;
        assert_eq!(reply.status, 502, "{}", reply.text());
        let message = reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(message.contains("could not connect"), "{message}");
        assert!(
            message.contains(&host),
            "the upstream is not named: {message}"
        );
        for secret in ["QUERYKEY", "USERINFO-PW"] {
            assert!(
                !message.contains(secret),
                "{secret} reached the client: {message}"
            );
        }
    }
    let calls = proxy.calls(session, 2).await;
    for call in &calls {
        let error = call.error.as_deref().unwrap_or("");
        assert!(error.contains("could not connect"), "{error}");
        assert!(
            !error.contains("QUERYKEY") && !error.contains("USERINFO-PW"),
            "{error}"
        );
    }
    let text = logs();
    assert!(text.contains(session), "{text}");
    for secret in ["QUERYKEY", "USERINFO-PW"] {
        assert!(!text.contains(secret), "{secret} was logged:\n{text}");
    }
}
