//! A call whose upstream stream has delivered its final event is complete, whatever the
//! client does next: Codex closes its stream at `response.completed` without reading the
//! body to its end, and such calls were recorded as `client disconnected`, their usage lost
//! to the ledger and to the learned token counts. Only a client that leaves before the final
//! event cuts the call.

use std::convert::Infallible;

use axum::body::Body;
use bytes::Bytes;
use mc_core::config::{Config, ToolsMode};
use serde_json::{Value, json};

use crate::agent_tools as anthropic;
use crate::agent_tools_chat as chat;
use crate::agent_tools_live::Live;
use crate::agent_tools_responses as responses;
use crate::support::*;

const HEADERS: &[(&str, &str)] = &[("x-magic-context-project", "proj-usage-end")];

#[derive(Debug, Clone, Copy)]
enum Wire {
    Anthropic,
    Chat,
    Responses,
}

impl Wire {
    fn path(self) -> &'static str {
        match self {
            Self::Anthropic => "/v1/messages",
            Self::Chat => "/v1/chat/completions",
            Self::Responses => "/v1/responses",
        }
    }

    /// A streamed request for `turns` (user, assistant, user, … texts).
    fn request(self, turns: &[&str]) -> Value {
        let role = |at: usize| {
            if at.is_multiple_of(2) {
                "user"
            } else {
                "assistant"
            }
        };
        match self {
            Self::Anthropic => {
                let messages: Vec<Value> = turns
                    .iter()
                    .enumerate()
                    .map(|(at, said)| json!({"role": role(at), "content": [{"type": "text", "text": said}]}))
                    .collect();
                let mut body = anthropic_request(&messages);
                body["stream"] = json!(true);
                body
            }
            Self::Chat => {
                let messages: Vec<Value> = turns
                    .iter()
                    .enumerate()
                    .map(|(at, said)| json!({"role": role(at), "content": said}))
                    .collect();
                let mut body = chat::request(&messages, true);
                body["stream_options"] = json!({"include_usage": true});
                body
            }
            Self::Responses => {
                let items: Vec<Value> = turns
                    .iter()
                    .enumerate()
                    .map(|(at, said)| {
                        if at.is_multiple_of(2) {
                            responses::user(said)
                        } else {
                            responses::said(said)
                        }
                    })
                    .collect();
                responses::request(&items, true)
            }
        }
    }

    /// The whole stream of an answer saying "Hi." with its usage.
    fn stream(self) -> String {
        match self {
            Self::Anthropic => anthropic::stream_of(&anthropic::message(
                "msg_1",
                vec![anthropic::text("Hi.")],
                "end_turn",
            )),
            Self::Chat => chat::stream_of(&chat::answer(Some("Hi."), vec![]), true),
            Self::Responses => {
                responses::stream_of(&responses::answer(vec![responses::said("Hi.")]))
            }
        }
    }

    /// What the client reads before it leaves: the final event (Anthropic `message_stop`,
    /// Chat's usage chunk, Responses `response.completed`), or, `early`, the first text.
    fn leaves_after(self, early: bool) -> &'static str {
        match (self, early) {
            (_, true) => "Hi.",
            (Self::Anthropic, false) => "event: message_stop",
            (Self::Chat, false) => r#""choices":[],"usage""#,
            (Self::Responses, false) => "event: response.completed",
        }
    }
}

/// The first call streams up to and including `upstream_until` (the final event, or the
/// first text when `early`) and then holds its body open; later calls stream whole.
async fn upstream(wire: Wire, early: bool) -> Upstream {
    let whole = wire.stream();
    let cut_marker = wire.leaves_after(early);
    let at = whole.find(cut_marker).unwrap();
    let held = whole[..at + whole[at..].find("\n\n").unwrap() + 2].to_owned();
    Upstream::start(move |_, index| {
        let (whole, held) = (whole.clone(), held.clone());
        async move {
            if index > 0 {
                return sse_response(whole);
            }
            let body = futures_util::stream::unfold(Some(held), |head| async move {
                match head {
                    Some(head) => Some((Ok::<_, Infallible>(Bytes::from(head)), None)),
                    None => std::future::pending().await,
                }
            });
            sse_response(Body::from_stream(body))
        }
    })
    .await
}

async fn proxy(upstream: &Upstream, tools: ToolsMode) -> Proxy {
    let mut config = Config::default();
    config.historian.enabled = false;
    config.tools.mode = tools;
    Proxy::start_with_config(settings(&upstream.url()), config).await
}

/// The question the client asks: long enough (over 1,000 estimated tokens) for its count
/// to teach the learned correction something.
fn question(wire: Wire, early: bool) -> String {
    format!(
        "Say hi ({wire:?}, early {early}) after reading this: {}",
        "the build runs every crate's tests. ".repeat(200)
    )
}

/// The client reads up to its leaving point (`reads`) and closes the stream; returns the
/// call's row and the proxy.
async fn leave(
    wire: Wire,
    early: bool,
    tools: ToolsMode,
    reads: &str,
) -> (mc_store::CallRow, Proxy, Upstream) {
    let upstream = upstream(wire, early).await;
    let proxy = proxy(&upstream, tools).await;
    let question = question(wire, early);
    let mut live = Live::open(
        &proxy.url(wire.path()),
        HEADERS,
        &wire.request(&[&question]),
    );
    live.until(reads).await;
    drop(live);
    let session = proxy.session_ids().remove(0);
    let row = proxy.calls(&session, 1).await.remove(0);
    (row, proxy, upstream)
}

async fn usage_is_kept_after_the_final_event(wire: Wire) {
    let (row, proxy, _upstream) =
        leave(wire, false, ToolsMode::Off, wire.leaves_after(false)).await;
    assert_eq!(
        row.error, None,
        "{wire:?}: the call was whole when the client left: {row:?}"
    );
    assert!(row.uncached_tokens.is_some(), "{wire:?}: {row:?}");
    assert!(row.output_tokens.is_some(), "{wire:?}: {row:?}");

    // The next pass learns the model's token count from the call the client left.
    let question = question(wire, false);
    let next = wire.request(&[&question, "Hi.", "Again."]);
    let reply = post(&proxy, wire.path(), HEADERS, &next).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let learned = proxy
        .store()
        .read(|tx| tx.token_correction(&row.model))
        .unwrap();
    assert!(
        learned.is_some_and(|learned| learned.samples >= 1),
        "{wire:?}: {learned:?}"
    );
    proxy.shutdown().await;
}

#[tokio::test]
async fn an_anthropic_client_leaving_after_message_stop_keeps_the_usage() {
    usage_is_kept_after_the_final_event(Wire::Anthropic).await;
}

#[tokio::test]
async fn a_chat_client_leaving_after_the_usage_chunk_keeps_the_usage() {
    usage_is_kept_after_the_final_event(Wire::Chat).await;
}

#[tokio::test]
async fn a_responses_client_leaving_after_response_completed_keeps_the_usage() {
    usage_is_kept_after_the_final_event(Wire::Responses).await;
}

/// Leaving before the final event is still a cut call, on every wire.
#[tokio::test]
async fn a_client_leaving_before_the_final_event_cuts_the_call() {
    for wire in [Wire::Anthropic, Wire::Chat, Wire::Responses] {
        let (row, proxy, _upstream) = leave(wire, true, ToolsMode::Off, "Hi.").await;
        assert_eq!(
            row.error.as_deref(),
            Some("client disconnected"),
            "{wire:?}: {row:?}"
        );
        proxy.shutdown().await;
    }
}

/// With the proxy's tools, an answer's end is held until the round's stream ends; a client
/// that leaves once the upstream delivered its final event leaves a whole round, whose
/// usage counts. One that leaves before it cuts the round.
#[tokio::test]
async fn a_round_whose_final_event_arrived_keeps_its_usage_when_the_client_leaves() {
    for wire in [Wire::Anthropic, Wire::Chat, Wire::Responses] {
        let (row, proxy, _upstream) = leave(wire, false, ToolsMode::Proxy, "Hi.").await;
        assert_eq!(row.error, None, "{wire:?}: {row:?}");
        assert!(row.uncached_tokens.is_some(), "{wire:?}: {row:?}");
        proxy.shutdown().await;
        let (row, proxy, _upstream) = leave(wire, true, ToolsMode::Proxy, "Hi.").await;
        assert_eq!(
            row.error.as_deref(),
            Some("client disconnected"),
            "{wire:?}: {row:?}"
        );
        proxy.shutdown().await;
    }
}
