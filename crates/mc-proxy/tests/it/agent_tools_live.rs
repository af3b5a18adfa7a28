//! A streamed answer in proxy tools mode reaches the client live: its first delta before the
//! upstream's round has ended, later rounds merged into the same message, and an error event
//! when a round fails mid-way.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::Response;
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use mc_core::config::ToolsMode;
use mc_wire::anthropic::{EventKind, MessageAccumulator, StreamEvent};
use mc_wire::openai::{ChatChunk, ChunkAccumulator};
use mc_wire::sse::SseDecoder;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::agent_tools::{
    HEAD, HEADERS, assert_calls_answered, contains, live_memories, message, proxy, request,
    stream_of, text, tool_use, unmarked,
};
use crate::agent_tools_chat as chat;
use crate::support::*;

/// How long the client waits for the first delta while the upstream holds the rest of its
/// round back: a proxy that reads rounds whole never delivers it.
const LIVE_WAIT: Duration = Duration::from_secs(10);

/// An upstream whose first answer the test writes piece by piece through the returned
/// sender (the stream ends when it is dropped); later requests get `later(request, index)`.
async fn held_upstream<F>(later: F) -> (Upstream, mpsc::UnboundedSender<String>)
where
    F: Fn(&Seen, usize) -> Response<Body> + Send + Sync + 'static,
{
    let (writer, pieces) = mpsc::unbounded_channel::<String>();
    let first = Arc::new(Mutex::new(Some(pieces)));
    let later = Arc::new(later);
    let upstream = Upstream::start(move |seen, index| {
        let (first, later) = (Arc::clone(&first), Arc::clone(&later));
        async move {
            if index > 0 {
                return later(&seen, index);
            }
            let pieces = first.lock().unwrap().take().unwrap();
            let body = futures_util::stream::unfold(pieces, |mut pieces| async move {
                let piece = pieces.recv().await?;
                Some((Ok::<_, Infallible>(Bytes::from(piece)), pieces))
            });
            sse_response(Body::from_stream(body))
        }
    })
    .await;
    (upstream, writer)
}

/// A streaming client's reply, read as it arrives; dropping it closes the connection.
pub struct Live {
    /// The request, until its response head arrived.
    pending: Option<BoxFuture<'static, reqwest::Result<reqwest::Response>>>,
    chunks: Option<BoxStream<'static, reqwest::Result<Bytes>>>,
    body: Vec<u8>,
}

impl Live {
    /// Sends the request; its reply is read by [`Self::until`] and [`Self::rest`].
    pub fn open(url: &str, headers: &[(&str, &str)], body: &Value) -> Self {
        let mut request = client()
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_string());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        Self {
            pending: Some(Box::pin(request.send())),
            chunks: None,
            body: Vec::new(),
        }
    }

    async fn chunks(&mut self) -> &mut BoxStream<'static, reqwest::Result<Bytes>> {
        if let Some(pending) = self.pending.take() {
            let response = pending.await.unwrap();
            assert_eq!(response.status(), 200);
            self.chunks = Some(Box::pin(response.bytes_stream()));
        }
        self.chunks.as_mut().unwrap()
    }

    /// Reads until `needle` has arrived; fails when it does not come within [`LIVE_WAIT`].
    pub async fn until(&mut self, needle: &str) {
        let read = async {
            while !contains(&self.body, needle) {
                match self.chunks().await.next().await {
                    Some(Ok(chunk)) => self.body.extend_from_slice(&chunk),
                    other => panic!("the reply ended before {needle:?}: {other:?}"),
                }
            }
        };
        tokio::time::timeout(LIVE_WAIT, read)
            .await
            .unwrap_or_else(|_| {
                panic!("{needle:?} did not reach the client while the upstream held its round back")
            });
    }

    /// The whole reply, once it ended.
    pub async fn rest(mut self) -> Vec<u8> {
        while let Some(chunk) = self.chunks().await.next().await {
            self.body.extend_from_slice(&chunk.unwrap());
        }
        self.body
    }
}

/// The kinds of an Anthropic stream's events, and the message they add up to, checked to
/// be one well-formed message (the accumulator refuses indexes that are not contiguous).
fn one_message(body: &[u8]) -> (Vec<EventKind>, Value) {
    let mut decoder = SseDecoder::new();
    let events = decoder.push(body).unwrap();
    decoder.finish().unwrap();
    let mut accumulator = MessageAccumulator::new();
    let mut kinds = Vec::new();
    for event in events {
        let event = StreamEvent::decode(event.data.as_bytes(), usize::MAX).unwrap();
        accumulator.push(&event).unwrap();
        kinds.push(event.kind);
    }
    assert!(accumulator.is_complete());
    let message = accumulator.finish().unwrap();
    (kinds, serde_json::from_slice(&message.encode()).unwrap())
}

#[tokio::test]
async fn a_streamed_answer_goes_out_live_and_continues_after_our_tools() {
    let round_one = message(
        "msg_1",
        vec![
            text("Looking it up."),
            tool_use("toolu_s", "ctx_search", json!({"query": "indent"})),
        ],
        "tool_use",
    );
    let mut round_two = message("msg_2", vec![text("Found it.")], "end_turn");
    round_two["usage"]["input_tokens"] = json!(45);
    let later = round_two.clone();
    let (upstream, writer) = held_upstream(move |_, _| sse_response(stream_of(&later))).await;
    let proxy = proxy(&upstream, ToolsMode::Proxy).await;
    let question = user("How do we indent?");
    let url = proxy.url("/v1/messages");
    let mut live = Live::open(
        &url,
        HEADERS,
        &request(std::slice::from_ref(&question), true),
    );
    let whole = stream_of(&round_one);
    let cut = whole.find("event: content_block_stop").unwrap();
    writer.send(whole[..cut].to_owned()).unwrap();
    live.until("Looking it up.").await;
    assert_eq!(upstream.seen().len(), 1, "the first round is still open");
    writer.send(whole[cut..].to_owned()).unwrap();
    drop(writer);
    let body = live.rest().await;

    let shown = String::from_utf8_lossy(&body);
    assert!(
        !shown.contains("ctx_search") && !shown.contains("toolu_s"),
        "our call never reaches the client: {shown}"
    );
    let (kinds, got) = one_message(&body);
    use EventKind::*;
    assert_eq!(
        kinds,
        [
            MessageStart,
            ContentBlockStart,
            ContentBlockDelta,
            ContentBlockStop,
            ContentBlockStart,
            ContentBlockDelta,
            ContentBlockStop,
            MessageDelta,
            MessageStop
        ]
    );
    assert_eq!(
        got["content"],
        json!([text("Looking it up."), text("Found it.")])
    );
    assert_eq!(
        got["id"], "msg_1",
        "one message, started by the first round"
    );
    assert_eq!(got["stop_reason"], "end_turn");
    assert_eq!(got["usage"]["input_tokens"], 45, "the final call's usage");
    let session = proxy.session_ids().remove(0);
    let calls = proxy.calls(&session, 2).await;
    assert!(calls.iter().all(|call| call.status == 200), "{calls:?}");
    assert_eq!(calls[0].stop_reason.as_deref(), Some("tool_use"));
    assert_eq!(calls[1].stop_reason.as_deref(), Some("end_turn"));

    // The client sends back what it got; upstream, the first round's text stays in the
    // hidden turn that wrote it, byte for byte.
    let got_turn = json!({"role": "assistant", "content": got["content"]});
    let next = [question, got_turn, user("Thanks.")];
    let reply = post(&proxy, "/v1/messages", HEADERS, &request(&next, true)).await;
    assert_eq!(reply.status, 200);
    let seen = upstream.seen();
    assert_eq!(seen.len(), 3);
    let (round, again) = (seen[1].json(), seen[2].json());
    let (round, again) = (
        round["messages"].as_array().unwrap(),
        again["messages"].as_array().unwrap(),
    );
    assert_eq!(again.len(), HEAD + 5, "{again:?}");
    assert_calls_answered(again);
    assert!(contains(&seen[2].body, &round[HEAD + 1].to_string()));
    assert_eq!(unmarked(&again[HEAD + 2]), unmarked(&round[HEAD + 2]));
    // The client's copy goes up as the last round's answer only (with the engine's tag).
    let last = again[HEAD + 3]["content"].to_string();
    assert!(
        last.contains("Found it.") && !last.contains("Looking it up."),
        "{last}"
    );
    proxy.shutdown().await;
}

#[tokio::test]
async fn a_streamed_chat_answer_goes_out_live_and_continues_after_our_tools() {
    let round_one = chat::answer(
        Some("Looking it up."),
        vec![chat::call(
            "call_s",
            "ctx_search",
            json!({"query": "kebab"}),
        )],
    );
    let mut round_two = chat::answer(Some("Found it."), vec![]);
    round_two["id"] = json!("chatcmpl-2");
    round_two["usage"]["prompt_tokens"] = json!(45);
    let later = round_two.clone();
    let (upstream, writer) =
        held_upstream(move |_, _| sse_response(chat::stream_of(&later, true))).await;
    let proxy = chat::proxy(&upstream).await;
    let question = json!({"role": "user", "content": "How are crates named?"});
    let mut body = chat::request(std::slice::from_ref(&question), true);
    body["stream_options"] = json!({"include_usage": true});
    let url = proxy.url("/v1/chat/completions");
    let headers = [("x-magic-context-project", "proj-chat")];
    let mut live = Live::open(&url, &headers, &body);
    let whole = chat::stream_of(&round_one, true);
    let cut = whole.find("\n\n").unwrap() + 2;
    writer.send(whole[..cut].to_owned()).unwrap();
    live.until("Looking it up.").await;
    assert_eq!(upstream.seen().len(), 1, "the first round is still open");
    writer.send(whole[cut..].to_owned()).unwrap();
    drop(writer);
    let body = live.rest().await;

    let shown = String::from_utf8_lossy(&body);
    assert!(!shown.contains("ctx_search"), "{shown}");
    let events = sse_events(&body);
    let (last, chunks) = events.split_last().unwrap();
    assert_eq!(last.1, "[DONE]");
    let mut accumulator = ChunkAccumulator::new();
    let mut finishes = Vec::new();
    for (_, chunk) in chunks {
        assert_eq!(chunk["id"], "chatcmpl-1", "one completion: {chunk}");
        for choice in chunk["choices"].as_array().unwrap() {
            assert_eq!(choice["index"], 0);
            assert!(choice["delta"].get("tool_calls").is_none(), "{chunk}");
            if !choice["finish_reason"].is_null() {
                finishes.push(choice["finish_reason"].clone());
            }
        }
        accumulator.push(&ChatChunk::decode(chunk.to_string().as_bytes(), usize::MAX).unwrap());
    }
    assert_eq!(finishes, ["stop"], "one finish, the last round's");
    let got = accumulator.finish();
    let got: Value = serde_json::from_slice(&got.encode()).unwrap();
    assert_eq!(
        got["choices"][0]["message"]["content"],
        "Looking it up.Found it."
    );
    assert_eq!(got["usage"]["prompt_tokens"], 45, "the final call's usage");

    let got_turn = json!({"role": "assistant", "content": "Looking it up.Found it."});
    let next = [
        question,
        got_turn,
        json!({"role": "user", "content": "Thanks."}),
    ];
    let reply = chat::post_chat(&proxy, &chat::request(&next, true)).await;
    assert_eq!(reply.status, 200);
    let seen = upstream.seen();
    assert_eq!(seen.len(), 3);
    let (round, again) = (seen[1].json(), seen[2].json());
    let at = chat::HEAD + 1;
    assert_eq!(again["messages"][at], round["messages"][at]);
    assert!(contains(&seen[2].body, &round["messages"][at].to_string()));
    assert_eq!(again["messages"][at + 1], round["messages"][at + 1]);
    let last = again["messages"][at + 2]["content"].to_string();
    assert!(
        last.contains("Found it.") && !last.contains("Looking it up."),
        "{last}"
    );
    proxy.shutdown().await;
}

/// The first round calls our tool; the second fails as `second` says.
async fn anthropic_failing_second(second: fn() -> Response<Body>) -> (Proxy, Upstream, Reply) {
    let first = message(
        "msg_1",
        vec![tool_use(
            "toolu_w",
            "ctx_memory",
            json!({"action": "write", "category": "PROJECT_RULES", "content": "Indent with tabs."}),
        )],
        "tool_use",
    );
    let upstream = Upstream::replying(move |_, index| match index {
        0 => sse_response(stream_of(&first)),
        _ => second(),
    })
    .await;
    let proxy = proxy(&upstream, ToolsMode::Proxy).await;
    let body = request(&[user("How do we indent?")], true);
    let reply = post(&proxy, "/v1/messages", HEADERS, &body).await;
    assert_eq!(reply.status, 200);
    (proxy, upstream, reply)
}

#[tokio::test]
async fn a_later_round_that_fails_ends_the_stream_with_an_error_event() {
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let (proxy, _upstream, reply) =
        anthropic_failing_second(|| json_response(529, &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))).await;
    let events = sse_events(&reply.body);
    assert_eq!(events[0].0.as_deref(), Some("message_start"));
    let (name, data) = events.last().unwrap();
    assert_eq!((name.as_deref(), data), (Some("error"), &overloaded));
    assert!(
        events
            .iter()
            .all(|(name, _)| name.as_deref() != Some("message_stop"))
    );
    assert!(!reply.text().contains("ctx_memory"));
    assert_eq!(
        live_memories(&proxy),
        ["Indent with tabs."],
        "what ran is kept"
    );
    proxy.shutdown().await;

    // A later round cut in the middle of an event.
    let (proxy, _upstream, reply) = anthropic_failing_second(|| {
        let whole = stream_of(&message("msg_2", vec![text("Tabs it is.")], "end_turn"));
        let cut = whole.find("\"text_delta\"").unwrap();
        sse_response(whole[..cut].to_owned())
    })
    .await;
    let events = sse_events(&reply.body);
    let (name, data) = events.last().unwrap();
    assert_eq!(name.as_deref(), Some("error"));
    assert_eq!(data["error"]["type"], "api_error");
    assert!(
        data["error"]["message"]
            .as_str()
            .unwrap()
            .contains("middle of an event"),
        "{data}"
    );
    let session = proxy.session_ids().remove(0);
    let calls = proxy.calls(&session, 2).await;
    assert!(calls[1].error.is_some(), "{calls:?}");
    proxy.shutdown().await;
}

#[tokio::test]
async fn a_later_chat_round_that_fails_ends_the_stream_with_an_error_chunk() {
    let first = chat::answer(
        None,
        vec![chat::call(
            "call_w",
            "ctx_note",
            json!({"action": "write", "content": "Check the README."}),
        )],
    );
    let failure =
        json!({"error": {"message": "boom", "type": "server_error", "param": null, "code": null}});
    let sent_failure = failure.clone();
    let upstream = Upstream::replying(move |_, index| match index {
        0 => sse_response(chat::stream_of(&first, true)),
        _ => json_response(500, &sent_failure),
    })
    .await;
    let proxy = chat::proxy(&upstream).await;
    let body = chat::request(&[json!({"role": "user", "content": "Note it."})], true);
    let reply = chat::post_chat(&proxy, &body).await;
    assert_eq!(reply.status, 200);
    let events = sse_events(&reply.body);
    assert_eq!(events.last().unwrap().1, failure);
    assert!(events.iter().all(|(_, data)| data != "[DONE]"));
    assert!(!reply.text().contains("ctx_note"));
    proxy.shutdown().await;
}

#[tokio::test]
async fn a_streamed_answer_stopped_at_the_bound_ends_as_one_turn() {
    let again = message(
        "msg_n",
        vec![
            text("Searching."),
            tool_use("toolu_again", "ctx_search", json!({"query": "again"})),
        ],
        "tool_use",
    );
    let upstream = Upstream::replying(move |_, _| sse_response(stream_of(&again))).await;
    let proxy = proxy(&upstream, ToolsMode::Proxy).await;
    let body = request(&[user("Search forever.")], true);
    let reply = post(&proxy, "/v1/messages", HEADERS, &body).await;
    assert!(!reply.text().contains("ctx_search"), "{}", reply.text());
    let (kinds, got) = one_message(&reply.body);
    assert_eq!(
        kinds
            .iter()
            .filter(|kind| **kind == EventKind::MessageStart)
            .count(),
        1
    );
    let texts: Vec<&Value> = got["content"].as_array().unwrap().iter().collect();
    assert_eq!(
        texts.len(),
        9,
        "each round's text, in order, then the limit's line: {texts:?}"
    );
    assert!(texts[..8].iter().all(|block| **block == text("Searching.")));
    assert!(
        texts[8]["text"]
            .as_str()
            .is_some_and(|line| line.contains("after 8 rounds")),
        "{texts:?}"
    );
    assert_eq!(got["stop_reason"], "end_turn", "no call is left to run");
    assert_eq!(upstream.seen().len(), 8);
    proxy.shutdown().await;
}
