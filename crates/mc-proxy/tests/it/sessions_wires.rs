//! A conversation that names no session is never found on another wire or with another
//! model family: a Chat run whose system and first user message equal those of a Responses
//! run (Pi on both) was filed as a fork of it. Sessions stored before the wire counted still
//! continue on their own wire.

use axum::http::Method;
use mc_core::HashChain;
use mc_wire::anthropic::{MessagesRequest, to_conversation};
use serde_json::{Value, json};

use crate::agent_tools_responses as responses;
use crate::support::*;

const PROJECT: &str = "proj-wires";
const SYSTEM: &str = "You are an expert coding assistant operating inside pi.";
const FIRST: &str = "Run echo hi with your bash tool, then say done.";

/// An upstream that answers every wire with "ok".
async fn upstream() -> Upstream {
    Upstream::replying(|seen, _| {
        if seen.uri.contains("/responses") {
            json_response(200, &responses::answer(vec![responses::said("ok")]))
        } else if seen.uri.contains("/chat/completions") {
            json_response(
                200,
                &json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-5",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 30, "completion_tokens": 2, "total_tokens": 32}}),
            )
        } else {
            json_response(200, &anthropic_message("ok"))
        }
    })
    .await
}

/// Sends one call of `turns` (user, assistant, user, … texts) on `path` for `model`, with
/// `headers` beside the project's.
async fn call(proxy: &Proxy, path: &str, model: &str, headers: &[(&str, &str)], turns: &[&str]) {
    let role = |at: usize| {
        if at.is_multiple_of(2) {
            "user"
        } else {
            "assistant"
        }
    };
    let body = match path {
        "/v1/responses" => {
            let mut input = vec![json!({"role": "system", "content": SYSTEM})];
            input.extend(turns.iter().enumerate().map(|(at, said)| {
                if at.is_multiple_of(2) {
                    responses::user(said)
                } else {
                    responses::said(said)
                }
            }));
            json!({"model": model, "store": false, "input": input})
        }
        "/v1/chat/completions" => {
            let mut messages = vec![json!({"role": "system", "content": SYSTEM})];
            messages.extend(
                turns
                    .iter()
                    .enumerate()
                    .map(|(at, said)| json!({"role": role(at), "content": said})),
            );
            json!({"model": model, "messages": messages})
        }
        _ => {
            let messages: Vec<Value> = turns
                .iter()
                .enumerate()
                .map(|(at, said)| json!({"role": role(at), "content": [{"type": "text", "text": said}]}))
                .collect();
            let mut body = anthropic_request(&messages);
            body["model"] = json!(model);
            body["system"] = json!(SYSTEM);
            body
        }
    };
    let mut all = vec![
        ("content-type", "application/json"),
        ("x-magic-context-project", PROJECT),
    ];
    all.extend_from_slice(headers);
    let reply = send(Method::POST, &proxy.url(path), &all, body.to_string()).await;
    assert_eq!(reply.status, 200, "{path}: {}", reply.text());
}

fn no_forks(proxy: &Proxy) -> Vec<String> {
    let ids = proxy.session_ids();
    assert!(ids.iter().all(|id| !id.contains('~')), "a fork: {ids:?}");
    ids
}

/// Pi on Responses names its session; the same run's opening on Chat, which names none, is
/// a session of its own, and so is a Responses run that names none either; each goes on by
/// itself.
#[tokio::test]
async fn a_chat_conversation_is_never_a_fork_of_a_responses_one() {
    let upstream = upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    let pi_responses = [("session_id", "0b9c6a10-pi-run")];
    call(&proxy, "/v1/responses", "gpt-5", &pi_responses, &[FIRST]).await;
    call(&proxy, "/v1/chat/completions", "gpt-5", &[], &[FIRST]).await;
    assert_eq!(no_forks(&proxy).len(), 2);
    call(&proxy, "/v1/responses", "gpt-5", &[], &[FIRST]).await;
    assert_eq!(no_forks(&proxy).len(), 3);

    // Each conversation's next turn continues its own session.
    let next = [FIRST, "ok", "and then?"];
    call(&proxy, "/v1/chat/completions", "gpt-5", &[], &next).await;
    call(&proxy, "/v1/responses", "gpt-5", &[], &next).await;
    call(&proxy, "/v1/responses", "gpt-5", &pi_responses, &next).await;
    let ids = no_forks(&proxy);
    assert_eq!(ids.len(), 3, "{ids:?}");
    for id in &ids {
        assert_eq!(proxy.messages(id).len(), 3, "{id}");
    }
}

/// Another model family on the same wire is another conversation; another model of the
/// same family continues it.
#[tokio::test]
async fn a_conversation_keeps_its_session_within_a_model_family_only() {
    let upstream = upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    let path = "/v1/chat/completions";
    call(&proxy, path, "gpt-5", &[], &[FIRST]).await;
    call(
        &proxy,
        path,
        "gpt-5-codex",
        &[],
        &[FIRST, "ok", "and then?"],
    )
    .await;
    assert_eq!(no_forks(&proxy).len(), 1);
    call(&proxy, path, "gpt-4o", &[], &[FIRST, "ok", "and then?"]).await;
    let ids = no_forks(&proxy);
    assert_eq!(ids.len(), 2, "{ids:?}");
}

/// A session named under the scope of a store written before the wire counted (the
/// project alone; written here through the explicit header) still continues on its own
/// wire and family, and is not taken by another wire's conversation.
#[tokio::test]
async fn a_session_stored_before_the_wire_counted_still_continues() {
    let upstream = upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    let scope = blake3::hash(format!("project\0{PROJECT}").as_bytes()).to_hex()[..12].to_owned();
    let body = anthropic_request(&[user(FIRST)]).to_string();
    let first = to_conversation(&MessagesRequest::decode(body.as_bytes(), usize::MAX).unwrap());
    let lane = HashChain::next_link(None, &first[0].content_hash()).to_string()[..12].to_owned();
    let stored = format!("chain-{scope}-{lane}");
    let path = "/v1/messages";
    call(
        &proxy,
        path,
        MODEL,
        &[("x-magic-context-session", &stored)],
        &[FIRST],
    )
    .await;
    // Ledger rows are written off the request path; the rule reads the latest.
    proxy.calls(&stored, 1).await;

    call(&proxy, "/v1/chat/completions", "gpt-5", &[], &[FIRST]).await;
    assert_eq!(no_forks(&proxy).len(), 2, "another wire: a new session");
    call(&proxy, path, MODEL, &[], &[FIRST, "ok", "and then?"]).await;
    let ids = no_forks(&proxy);
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert_eq!(proxy.messages(&stored).len(), 3, "continued: {ids:?}");
}
