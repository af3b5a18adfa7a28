//! Session resolution over real Claude Code traffic: 64 recorded calls of one session, with
//! Haiku side calls (quota probes, titles, topic checks) interleaved with the Sonnet main
//! calls, a compaction call, and the continued session after it.

use std::collections::BTreeSet;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use bytes::Bytes;
use mc_core::config::Config;
use mc_engine::Engine;
use mc_store::Store;
use serde_json::Value;

use crate::app::App;
use crate::pass_run::plan_with_retries;
use crate::provider::Provider;
use crate::settings::ProxySettings;

struct Call {
    model: String,
    messages: usize,
    headers: HeaderMap,
    body: Bytes,
}

fn capture() -> Vec<Call> {
    let path = mc_testdata::dir().join("anthropic-capture/claude-code-traffic.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .map(|line| {
            let row: Value = serde_json::from_str(line).unwrap();
            let request = &row["request"];
            let body = match &request["body"] {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let parsed: Value = serde_json::from_str(&body).unwrap();
            let mut headers = HeaderMap::new();
            for (name, value) in request["headers"].as_object().unwrap() {
                headers.insert(
                    HeaderName::try_from(name.as_str()).unwrap(),
                    HeaderValue::try_from(value.as_str().unwrap()).unwrap(),
                );
            }
            Call {
                model: parsed["model"].as_str().unwrap().to_owned(),
                messages: parsed["messages"].as_array().unwrap().len(),
                headers,
                body: Bytes::from(body),
            }
        })
        .collect()
}

#[test]
fn side_calls_and_compaction_never_join_the_main_session() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("context.db")).unwrap();
    let settings = ProxySettings {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream_anthropic: "http://127.0.0.1:9".into(),
        upstream_openai: "http://127.0.0.1:9".into(),
        max_request_bytes: 32 << 20,
        context_window: None,
        upstream_idle_timeout: Duration::from_secs(5),
        historian_retry: mc_llm::RetryPolicy::default(),
        cache_budget: mc_engine::CacheBudget::default(),
        allowed_hosts: Vec::new(),
        client_limits: crate::ClientLimits::default(),
        user_config: None,
    };
    let app = App::new(settings, Ok(Engine::new(store, Config::default())), None).unwrap();
    let calls = capture();
    let sessions: Vec<String> = calls
        .iter()
        .map(|call| {
            let planned = plan_with_retries(
                &app,
                Provider::Anthropic,
                &call.headers,
                &crate::chunked_body::ChunkedBody::from(call.body.clone()),
                None,
                None,
            )
            .unwrap();
            planned.session.unwrap().as_str().to_owned()
        })
        .collect();

    let main: Vec<usize> = (0..calls.len())
        .filter(|&i| calls[i].model.contains("sonnet"))
        .collect();
    // The Sonnet calls before the compaction call (the first with 27 messages whose first
    // message lost its reminder) are one growing conversation: one session, never forked.
    let compaction = main
        .iter()
        .copied()
        .find(|&i| calls[i].messages == 27)
        .unwrap();
    let before: BTreeSet<&str> = main
        .iter()
        .filter(|&&i| i < compaction)
        .map(|&i| sessions[i].as_str())
        .collect();
    assert_eq!(before.len(), 1, "{before:?}");
    let first = *before.iter().next().unwrap();
    assert!(!first.contains('~'), "the main session forked: {first}");
    // The compaction call and the continued conversation are conversations of their own.
    let after: BTreeSet<&str> = main
        .iter()
        .filter(|&&i| i > compaction)
        .map(|&i| sessions[i].as_str())
        .collect();
    assert_eq!(after.len(), 1, "{after:?}");
    assert!(!after.contains(first));
    assert!(!before.contains(sessions[compaction].as_str()));
    assert!(!after.contains(sessions[compaction].as_str()));
    // No Haiku side call lands in a main session.
    for (i, call) in calls.iter().enumerate() {
        if call.model.contains("haiku") {
            assert!(
                !before.contains(sessions[i].as_str()) && !after.contains(sessions[i].as_str()),
                "side call {i} joined a main session"
            );
        }
    }
    // The main session's log holds every message of its longest request.
    let longest = main
        .iter()
        .filter(|&&i| i < compaction)
        .map(|&i| calls[i].messages)
        .max();
    let engine = app.engine().unwrap();
    let stored = engine
        .store()
        .read(|tx| tx.message_count(&mc_core::SessionId::new(first).unwrap()))
        .unwrap();
    assert_eq!(Some(stored as usize), longest);
}
