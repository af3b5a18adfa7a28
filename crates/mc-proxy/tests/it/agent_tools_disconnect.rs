//! A streaming client that goes away while the proxy runs rounds of its own tools: the proxy
//! stops there (the round in flight cancelled, no further upstream call), records the cut
//! round in the ledger, says so once in the log, and serves the next request as usual.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use mc_core::config::{Config, ToolsMode};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::agent_tools::{HEADERS, contains, message, request, stream_of, text, tool_use};
use crate::agent_tools_chat as chat;
use crate::agent_tools_live::Live;
use crate::agent_tools_responses as responses;
use crate::support::*;

/// The request that gets a plain answer, once the client that left is gone.
const AGAIN: &str = "Hello again.";

/// How long the test waits for the proxy to let go of the round it holds: far less than the
/// proxy's upstream timeout, so only the client's leaving can end the round in time.
const RELEASE_WAIT: Duration = Duration::from_secs(10);

/// How the upstream treats the model's second round.
#[derive(Debug, Clone, Copy)]
enum Second {
    /// Answers it like every other round.
    Whole,
    /// Streams its start, our tool's call begun, then holds the rest back.
    HeldBody,
    /// Never answers, not even with a status line.
    HeldHead,
}

/// Says on its channel when dropped: the upstream learns that the proxy let go of the round
/// it held.
struct OnDrop(Option<oneshot::Sender<()>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(released) = self.0.take() {
            let _ = released.send(());
        }
    }
}

/// The wire the client speaks.
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

    /// A streamed request asking `question`.
    fn request(self, question: &str) -> Value {
        match self {
            Self::Anthropic => request(&[user(question)], true),
            Self::Chat => chat::request(&[json!({"role": "user", "content": question})], true),
            Self::Responses => responses::request(&[responses::user(question)], true),
        }
    }

    /// The model's answer saying `said` (if anything) and calling `ctx_search` (if `calls`),
    /// as the upstream streams it.
    fn stream(self, said: Option<&str>, calls: bool) -> String {
        match self {
            Self::Anthropic => {
                let mut content: Vec<Value> = said.map(text).into_iter().collect();
                if calls {
                    content.push(tool_use(
                        "toolu_s",
                        "ctx_search",
                        json!({"query": "indent"}),
                    ));
                }
                let stop = if calls { "tool_use" } else { "end_turn" };
                stream_of(&message("msg_s", content, stop))
            }
            Self::Chat => {
                let calls = if calls {
                    vec![chat::call(
                        "call_s",
                        "ctx_search",
                        json!({"query": "indent"}),
                    )]
                } else {
                    vec![]
                };
                chat::stream_of(&chat::answer(said, calls), false)
            }
            Self::Responses => {
                let mut items: Vec<Value> = said.map(responses::said).into_iter().collect();
                if calls {
                    items.push(responses::call(
                        "call_s",
                        "ctx_search",
                        json!({"query": "indent"}),
                    ));
                }
                responses::stream_of(&responses::answer(items))
            }
        }
    }

    /// Where a held round's stream stops: after our tool's call began, before its end.
    fn cut(self, whole: &str) -> usize {
        let marker = match self {
            Self::Anthropic => "event: content_block_delta",
            Self::Chat => "\"finish_reason\":\"tool_calls\"",
            Self::Responses => "event: response.function_call_arguments.delta",
        };
        let at = whole.find(marker).unwrap();
        whole[..at].rfind("\n\n").map_or(0, |end| end + 2)
    }
}

/// An upstream whose model says something and calls `ctx_search`, then keeps calling it with
/// nothing to say (rounds the client never sees) until the proxy's bound stops it; a request
/// with [`AGAIN`] gets a plain answer. The receiver hears when the proxy drops a held second
/// round.
async fn searching_upstream(wire: Wire, second: Second) -> (Upstream, oneshot::Receiver<()>) {
    let first = wire.stream(Some("Looking it up."), true);
    let again = wire.stream(None, true);
    let hello = wire.stream(Some("Hi."), false);
    let (released, heard) = oneshot::channel();
    let released = Arc::new(Mutex::new(Some(released)));
    let upstream = Upstream::start(move |seen, index| {
        let (first, again, hello) = (first.clone(), again.clone(), hello.clone());
        let guard = (index == 1).then(|| OnDrop(released.lock().unwrap().take()));
        async move {
            if contains(&seen.body, AGAIN) {
                return sse_response(hello);
            }
            match (index, second) {
                (0, _) => sse_response(first),
                (1, Second::HeldBody) => {
                    let head = Bytes::from(again[..wire.cut(&again)].to_owned());
                    let body = futures_util::stream::unfold(
                        (guard, Some(head)),
                        |(guard, head)| async move {
                            match head {
                                Some(head) => Some((Ok::<_, Infallible>(head), (guard, None))),
                                None => std::future::pending().await,
                            }
                        },
                    );
                    sse_response(Body::from_stream(body))
                }
                (1, Second::HeldHead) => {
                    let _guard = guard;
                    std::future::pending().await
                }
                _ => sse_response(again),
            }
        }
    })
    .await;
    (upstream, heard)
}

/// A proxy serving its tools, which never gives up on a silent upstream within the test.
async fn patient_proxy(upstream: &Upstream) -> Proxy {
    let mut config = Config::default();
    config.historian.enabled = false;
    config.tools.mode = ToolsMode::Proxy;
    let mut settings = settings(&upstream.url());
    settings.upstream_idle_timeout = Duration::from_secs(600);
    Proxy::start_with_config(settings, config).await
}

/// Waits (at most [`RELEASE_WAIT`]) until `done` holds.
async fn until(mut done: impl FnMut() -> bool) {
    let waited = tokio::time::timeout(RELEASE_WAIT, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "the condition never held");
}

/// The client reads the first round's text, waits until the second round is upstream and
/// held there (as `second` says), and goes away.
async fn a_client_that_leaves_stops_the_rounds(wire: Wire, second: Second) {
    let logs = log_buffer();
    // Session ids come from the conversation: each test asks its own question, so the log
    // lines of tests running at once are told apart.
    let body = wire.request(&format!("How do we indent? ({wire:?}, {second:?})"));

    // The same script read to the end: the model calls our tool until the proxy's bound.
    let (upstream, _) = searching_upstream(wire, Second::Whole).await;
    let proxy = patient_proxy(&upstream).await;
    let whole = post(&proxy, wire.path(), HEADERS, &body).await;
    assert_eq!(whole.status, 200);
    assert!(whole.text().contains("Looking it up."), "{}", whole.text());
    let full = upstream.seen().len();
    assert_eq!(full, 8, "every round up to the bound");
    proxy.shutdown().await;

    let (upstream, released) = searching_upstream(wire, second).await;
    let proxy = patient_proxy(&upstream).await;
    let mut live = Live::open(&proxy.url(wire.path()), HEADERS, &body);
    live.until("Looking it up.").await;
    until(|| upstream.seen().len() == 2).await;
    drop(live);
    let let_go = tokio::time::timeout(RELEASE_WAIT, released).await;
    assert!(
        matches!(let_go, Ok(Ok(()))),
        "{wire:?} {second:?}: the proxy still holds the round its client no longer reads"
    );

    let session = proxy.session_ids().remove(0);
    let calls = proxy.calls(&session, 2).await;
    assert_eq!(calls[0].error, None, "{calls:?}");
    assert!(
        calls[1]
            .error
            .as_deref()
            .is_some_and(|error| error.starts_with("client disconnected")),
        "the cut round is in the ledger: {calls:?}"
    );

    // The proxy serves the next request as usual, and started no round for the client
    // that left.
    let reply = post(&proxy, wire.path(), HEADERS, &wire.request(AGAIN)).await;
    assert_eq!(reply.status, 200);
    assert!(reply.text().contains("Hi."), "{}", reply.text());
    let sent = upstream.seen().len() - 1;
    assert_eq!(
        sent, 2,
        "{wire:?} {second:?}: rounds sent for the client that left"
    );
    assert!(sent < full);

    let logs = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    let said = logs
        .lines()
        .filter(|line| line.contains("the client went away") && line.contains(&session))
        .count();
    assert_eq!(said, 1, "said once");
    proxy.shutdown().await;
}

#[tokio::test]
async fn a_client_that_leaves_mid_round_cancels_the_round_and_starts_no_other() {
    a_client_that_leaves_stops_the_rounds(Wire::Anthropic, Second::HeldBody).await;
}

#[tokio::test]
async fn a_client_that_leaves_before_the_upstream_answers_cancels_the_call() {
    a_client_that_leaves_stops_the_rounds(Wire::Anthropic, Second::HeldHead).await;
}

#[tokio::test]
async fn a_chat_client_that_leaves_mid_round_cancels_the_round_and_starts_no_other() {
    a_client_that_leaves_stops_the_rounds(Wire::Chat, Second::HeldBody).await;
}

#[tokio::test]
async fn a_responses_client_that_leaves_mid_round_cancels_the_round_and_starts_no_other() {
    a_client_that_leaves_stops_the_rounds(Wire::Responses, Second::HeldBody).await;
}
