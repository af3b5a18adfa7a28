//! The historian of a session that arrived on the Responses wire (Codex): its calls go to
//! `/v1/responses` with the session's own credentials, never to Chat Completions, which a
//! backend serving only the Responses API would refuse, and what it answers is published.

use std::time::{Duration, Instant};

use axum::http::Method;
use mc_core::SessionId;
use mc_proxy::RetryPolicy;
use mc_sim::server::HistorianMode;
use serde_json::{Value, json};

use crate::historian::{WINDOW_TOKENS, heading_range, message_text, proxy, simulator};
use crate::support::{Proxy, send, tap};

/// The Codex thread every request names.
const THREAD: &str = "0199c0de-historian-thread";
/// The client's key: the historian must re-send exactly this one.
const KEY: &str = "sk-codex-historian";
/// Turns: about 21K tokens in all, so the historian's trigger is passed well before the end.
const TURNS: usize = 30;

fn item(role: &str, kind: &str, text: &str) -> Value {
    json!({"type": "message", "role": role, "content": [{"type": kind, "text": text}]})
}

async fn turn(proxy: &Proxy, input: &mut Vec<Value>) -> u16 {
    input.push(item("user", "input_text", &message_text(input.len())));
    let body = json!({
        "model": "gpt-5",
        "stream": false,
        "store": false,
        "instructions": "You are a coding agent.",
        "input": input,
        "prompt_cache_key": THREAD,
    });
    let reply = send(
        Method::POST,
        &proxy.url("/v1/responses"),
        &[
            ("content-type", "application/json"),
            ("authorization", &format!("Bearer {KEY}")),
            ("session-id", THREAD),
        ],
        body.to_string(),
    )
    .await;
    input.push(item("assistant", "output_text", &message_text(input.len())));
    reply.status.as_u16()
}

/// Every history heading line in the texts of a sent body's input items.
fn headings(body: &Value) -> Vec<(u64, u64)> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .flat_map(|text| text.lines().filter_map(heading_range).collect::<Vec<_>>())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responses_session_is_summarised_over_the_responses_wire() {
    let sim = simulator(HistorianMode::Honest).await;
    let (upstream, _relayed) = tap(sim.local_addr()).await;
    let proxy = proxy(&upstream.url(), RetryPolicy::default()).await;
    let mut input = Vec::new();
    for _ in 0..TURNS {
        assert_eq!(turn(&proxy, &mut input).await, 200);
    }
    let [session] = proxy.session_ids().try_into().unwrap();
    let session = SessionId::new(session).unwrap();
    // Runs are asynchronous: wait for one to publish, then send one more turn, whose pass
    // may move the boundary past what was published.
    let waited = Instant::now();
    let store = proxy.store();
    let compartments = loop {
        let compartments = store.read(|tx| tx.compartments(&session)).unwrap();
        if !compartments.is_empty() || waited.elapsed() > Duration::from_secs(30) {
            break compartments;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    for _ in 0..4 {
        assert_eq!(turn(&proxy, &mut input).await, 200);
    }
    let seen = upstream.seen();
    let runs = store.read(|tx| tx.historian_runs(&session, 100)).unwrap();
    let context = format!("runs: {runs:#?}\nledger: {:#?}", sim.ledger());

    let historian: Vec<_> = seen
        .iter()
        .filter(|seen| seen.json()["text"]["format"]["name"] == "record_history")
        .collect();
    assert!(!historian.is_empty(), "no historian call\n{context}");
    for call in &historian {
        assert_eq!(call.uri, "/v1/responses");
        assert_eq!(
            call.header("authorization"),
            Some(&*format!("Bearer {KEY}"))
        );
        let body = call.json();
        assert_eq!(body["text"]["format"]["type"], "json_schema");
        assert_eq!(body["text"]["format"]["strict"], true);
        assert_eq!(body["store"], false);
    }
    assert!(
        seen.iter().all(|seen| seen.uri == "/v1/responses"),
        "every call, the client's and the historian's, on the Responses wire: {:?}",
        seen.iter().map(|seen| &seen.uri).collect::<Vec<_>>()
    );
    assert!(
        runs.iter()
            .any(|run| run.outcome == "published" || run.outcome == "provisional"),
        "{context}"
    );
    assert!(!compartments.is_empty(), "{context}");
    // The client's last request carries the published history in its head, inside the window.
    let last = seen
        .iter()
        .rev()
        .find(|seen| seen.json()["text"]["format"]["name"] != "record_history")
        .unwrap()
        .json();
    assert!(!headings(&last).is_empty(), "{context}");
    assert!(
        sim.ledger()
            .iter()
            .all(|call| call.status == 200 && call.prompt_tokens <= WINDOW_TOKENS),
        "{context}"
    );
    proxy.shutdown().await;
    sim.shutdown().await.unwrap();
}
