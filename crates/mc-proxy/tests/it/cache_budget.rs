//! The per-session caches are caches: a proxy that keeps nothing between passes, or that
//! evicts sessions as it goes, sends exactly the bytes of a proxy that keeps everything.

use axum::http::Method;
use mc_proxy::CacheBudget;
use serde_json::{Value, json};

use crate::support::{Proxy, Upstream, json_response, send, settings};

/// A window small enough that the sessions below are reduced (drops land, outputs shrink)
/// as they grow, so the passes compared do more than append.
const WINDOW_TOKENS: u64 = 12_000;

/// An upstream answering every call with a short message whose reported prompt grows with
/// the body, as a provider's count would: the proxy plans on it.
async fn counting_upstream() -> Upstream {
    Upstream::replying(|seen, _| {
        let input_tokens = seen.body.len() / 4;
        json_response(
            200,
            &json!({
                "id": "msg_1", "type": "message", "role": "assistant",
                "model": crate::support::MODEL,
                "content": [{"type": "text", "text": "ok"}],
                "stop_reason": "end_turn", "stop_sequence": null,
                "usage": {"input_tokens": input_tokens, "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 0, "output_tokens": 2},
            }),
        )
    })
    .await
}

/// Turn `turn` of session `session`: a tool call and its output of a few KB, distinct per
/// session and turn, with now and then an output repeated (so the duplicate lane acts).
fn turn_messages(session: usize, turn: usize) -> [Value; 2] {
    let id = format!("toolu_{session}_{turn}");
    let seed = if turn % 4 == 3 { turn - 1 } else { turn };
    let output: String = (0..60)
        .map(|line| format!("{session}:{seed}:{line} let value = compute(input, {line});\n"))
        .collect();
    [
        json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("Reading file {turn}.")},
            {"type": "tool_use", "id": id, "name": "Read", "input": {"path": format!("src/f{turn}.rs")}},
        ]}),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": output,
             "cache_control": {"type": "ephemeral"}},
        ]}),
    ]
}

/// Drives two interleaved sessions through `proxy` and returns every upstream body.
async fn drive(proxy: &Proxy, upstream: &Upstream) -> Vec<axum::body::Bytes> {
    let mut conversations: Vec<Vec<Value>> = (0..2)
        .map(|session| {
            vec![json!({"role": "user", "content": format!("Task of session {session}: fix the parser.")})]
        })
        .collect();
    for turn in 0..14 {
        for (session, messages) in conversations.iter_mut().enumerate() {
            if turn > 0 {
                // Markers move to the new last block, as Claude Code moves them.
                if let Some(last) = messages.last_mut()
                    && let Some(blocks) = last["content"].as_array_mut()
                {
                    for block in blocks {
                        block
                            .as_object_mut()
                            .map(|block| block.remove("cache_control"));
                    }
                }
                messages.extend(turn_messages(session, turn));
            }
            let body = json!({
                "model": crate::support::MODEL,
                "max_tokens": 2048,
                "system": [{"type": "text", "text": "You are a careful coding agent.",
                            "cache_control": {"type": "ephemeral"}}],
                "messages": messages,
            })
            .to_string();
            let session_id = format!("0b7e5a10-0000-4000-8000-00000000000{session}");
            let headers = [
                ("content-type", "application/json"),
                ("x-claude-code-session-id", session_id.as_str()),
            ];
            let reply = send(Method::POST, &proxy.url("/v1/messages"), &headers, body).await;
            assert_eq!(reply.status.as_u16(), 200, "{}", reply.text());
        }
    }
    upstream.seen().into_iter().map(|seen| seen.body).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evicted_sessions_render_the_bytes_of_kept_ones() {
    let kept_upstream = counting_upstream().await;
    let mut kept_settings = settings(&kept_upstream.url());
    kept_settings.context_window = Some(WINDOW_TOKENS);
    let kept = Proxy::start_with_engine_budget(kept_settings, CacheBudget::default()).await;
    let expected = drive(&kept, &kept_upstream).await;

    // Nothing kept between passes: every pass rebuilds every cache.
    let none_upstream = counting_upstream().await;
    let mut none_settings = settings(&none_upstream.url());
    none_settings.context_window = Some(WINDOW_TOKENS);
    none_settings.cache_budget = CacheBudget::new(0);
    let none = Proxy::start_with_engine_budget(none_settings, CacheBudget::new(0)).await;
    assert_eq!(drive(&none, &none_upstream).await, expected);

    // Room for about one session's values: the two sessions evict each other.
    let one_upstream = counting_upstream().await;
    let mut one_settings = settings(&one_upstream.url());
    one_settings.context_window = Some(WINDOW_TOKENS);
    one_settings.cache_budget = CacheBudget::new(600_000);
    let one = Proxy::start_with_engine_budget(one_settings, CacheBudget::new(600_000)).await;
    assert_eq!(drive(&one, &one_upstream).await, expected);

    // The sessions were reduced, not only appended to: the comparison covers drops.
    let last = String::from_utf8_lossy(expected.last().unwrap()).into_owned();
    assert!(last.contains("[dropped §"), "nothing was dropped: {last}");
}
