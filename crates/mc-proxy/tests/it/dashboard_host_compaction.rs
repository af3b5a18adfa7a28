//! A session's page sets what the session cost beside what the host's own compaction would
//! have cost on the same calls: an estimate over the client prompts the ledger recorded, and
//! none for calls recorded before it kept them.

use mc_core::{Host, SessionId};
use mc_proxy::TOKEN_HEADER;
use mc_store::{CallRow, NewSession};

use crate::dashboard::{SESSION, seeded, token};
use crate::support::{MODEL, Proxy, send};

/// A call as a ledger from before schema v24 holds it: no client prompt, no window.
fn old_call(session: &str, started_ms: i64) -> CallRow {
    CallRow {
        session: Some(SessionId::new(session).unwrap()),
        pass_seq: None,
        started_ms,
        route: "anthropic".to_owned(),
        model: MODEL.to_owned(),
        pass_kind: Some("cache_hit".to_owned()),
        bust_cause: None,
        status: 200,
        uncached_tokens: Some(10),
        cache_write_tokens: Some(100),
        cache_read_tokens: Some(5_000),
        output_tokens: Some(40),
        first_byte_ms: Some(300),
        total_ms: 900,
        stop_reason: Some("end_turn".to_owned()),
        usable_window: Some(180_000),
        overflow_retry: false,
        error: None,
        client_prompt_tokens: None,
        client_fixed_tokens: None,
        window_tokens: None,
    }
}

async fn get(proxy: &Proxy, path: &str, headers: &[(&str, &str)]) -> crate::support::Reply {
    send(axum::http::Method::GET, &proxy.url(path), headers, "").await
}

async fn api(proxy: &Proxy, path: &str) -> serde_json::Value {
    let reply = get(proxy, path, &[(TOKEN_HEADER, &token(proxy))]).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.json()
}

async fn page(proxy: &Proxy, session: &str) -> String {
    let cookie = format!("mc_dashboard={}", token(proxy));
    let reply = get(
        proxy,
        &format!("/_magic-context/ui/sessions/{session}"),
        &[("cookie", &cookie)],
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.text()
}

/// Each call through the proxy records the client's own prompt, growing with the
/// conversation, and the session's page and API price the host's compaction over them.
#[tokio::test]
async fn a_session_run_through_the_proxy_shows_the_host_compaction_estimate() {
    let (_upstream, proxy) = seeded().await;
    let calls = proxy.calls(SESSION, 3).await;
    let prompts: Vec<(Option<u64>, Option<u64>, Option<u64>)> = calls
        .iter()
        .map(|call| {
            (
                call.client_prompt_tokens,
                call.client_fixed_tokens,
                call.window_tokens,
            )
        })
        .collect();
    for window in prompts.iter().map(|prompt| prompt.2) {
        assert_eq!(window, Some(200_000), "{prompts:?}");
    }
    let sizes: Vec<u64> = prompts.iter().filter_map(|prompt| prompt.0).collect();
    assert!(
        sizes.len() == 3 && sizes.windows(2).all(|pair| pair[0] < pair[1]),
        "{prompts:?}"
    );

    let detail = api(&proxy, &format!("/_magic-context/api/sessions/{SESSION}")).await;
    let compared = &detail["host_compaction"];
    assert_eq!(compared["calls_compared"], 3, "{compared}");
    assert_eq!(compared["calls_total"], 3, "{compared}");
    assert_eq!(compared["estimate"]["calls"], 3, "{compared}");
    assert_eq!(compared["estimate"]["compactions"], 0, "{compared}");
    let input = ["uncached_tokens", "cache_write_tokens", "cache_read_tokens"]
        .map(|key| compared["estimate"][key].as_u64().unwrap());
    assert_eq!(
        input.iter().sum::<u64>(),
        sizes.iter().sum::<u64>(),
        "{compared}"
    );
    let estimate = compared["estimate"]["cost_usd"].as_f64().unwrap();
    assert!(estimate > 0.0, "{compared}");
    let cost = detail["summary"]["cost_usd"].as_f64().unwrap();
    assert!(
        (compared["calls_cost_usd"].as_f64().unwrap() - cost).abs() < 1e-12,
        "{detail}"
    );

    let html = page(&proxy, SESSION).await;
    assert!(html.contains("Host's own compaction"), "{html}");
    assert!(
        html.contains(&format!("about <strong>${estimate:.4}</strong> (estimate)"))
            || html.contains(&format!("about <strong>${estimate:.2}</strong> (estimate)")),
        "{html}"
    );
    assert!(!html.contains("no estimate"), "{html}");
}

/// Calls recorded before the ledger kept the client's prompt are left out, and said so; a
/// session with only such calls shows no estimate at all.
#[tokio::test]
async fn calls_recorded_without_the_client_prompt_are_left_out() {
    let (_upstream, proxy) = seeded().await;
    let calls = proxy.calls(SESSION, 3).await;
    let store = proxy.store();
    store
        .write(|tx| tx.record_call(&old_call(SESSION, calls[0].started_ms - 60_000)))
        .unwrap();
    let detail = api(&proxy, &format!("/_magic-context/api/sessions/{SESSION}")).await;
    assert_eq!(detail["host_compaction"]["calls_compared"], 3);
    assert_eq!(detail["host_compaction"]["calls_total"], 4);
    assert!(page(&proxy, SESSION).await.contains("over 3 of 4 calls"));

    let old = SessionId::new("old-session").unwrap();
    store
        .write(|tx| {
            tx.upsert_session(
                &NewSession {
                    id: old.clone(),
                    host: Host::ClaudeCode,
                    project: None,
                },
                1_000,
            )?;
            tx.record_call(&old_call(old.as_str(), 2_000))
        })
        .unwrap();
    let detail = api(&proxy, "/_magic-context/api/sessions/old-session").await;
    assert_eq!(
        detail["host_compaction"],
        serde_json::Value::Null,
        "{detail}"
    );
    assert_eq!(detail["summary"]["calls"], 1, "{detail}");
    let html = page(&proxy, "old-session").await;
    assert!(html.contains("no estimate"), "{html}");
}
