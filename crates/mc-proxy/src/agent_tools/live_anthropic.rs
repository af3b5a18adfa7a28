//! A streamed Anthropic answer in proxy tools mode, sent to the client as it arrives.
//!
//! Each round's events go through [`Merge`]: the first `message_start` and every content
//! block of the client's kind (text, thinking, the client's own `tool_use`) pass at once; a
//! `tool_use` block calling one of our tools never reaches the client; the round's
//! `message_delta` and `message_stop` wait until the round is settled ([`settle_round`]).
//! When the model called only our tools, they run, the next round goes upstream, and its
//! blocks continue the same client message, numbered after the blocks already sent, so the
//! client reads one message whose indexes stay contiguous.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::Response;
use mc_wire::anthropic::{ContentBlock, EventKind, MessageAccumulator, StreamEvent, Usage};
use mc_wire::sse::{SseEvent, encode_event};
use serde_json::Value;

use super::anthropic_rounds::{Rounds, settle_round};
use super::live::{RoundEvents, Sink, live_response, raw};
use super::live_round::{Ended, close_round, next_live_round};
use super::round_call::{Call, Settled};
use crate::app::App;
use crate::provider::Provider;
use mc_agent_tools::anthropic_splice::Prepared;
use mc_agent_tools::is_ours;

/// The stop reason of an answer that ends the model's turn.
const END_TURN: &str = "end_turn";

/// Starts answering the client live from the successful streamed `response` to `call`.
pub fn answer_live(
    app: Arc<App>,
    prepared: Prepared,
    call: Call,
    response: reqwest::Response,
) -> Response<Body> {
    let (sink, out) = live_response(response.status(), response.headers(), false);
    tokio::spawn(run(app, prepared, call, response, sink));
    out
}

/// Streams one round's events to the client as `merge` lets them through, until the round
/// ends or the client goes away: how it ended, and the message it carried.
async fn stream_round(
    mut events: RoundEvents,
    merge: &mut Merge,
    sink: &mut Sink,
) -> (Ended, MessageAccumulator) {
    let mut accumulator = MessageAccumulator::new();
    let mut broken = None;
    let mut sent = Ok(());
    while let Some(event) = events.next_unless_gone(sink, &mut sent).await {
        let Ok(decoded) = StreamEvent::decode(event.data.as_bytes(), usize::MAX) else {
            sent = sink.send(raw(&event)).await;
            if sent.is_err() {
                break;
            }
            continue;
        };
        if let Err(error) = accumulator.push(&decoded) {
            broken.get_or_insert_with(|| error.to_string());
        }
        if let Some(text) = merge.pass(&event, decoded) {
            sent = sink.send(text).await;
            if sent.is_err() {
                break;
            }
        }
    }
    let end = events.finish();
    let unfinished = broken.or_else(|| {
        (!accumulator.is_complete())
            .then(|| "the upstream stream ended before message_stop".to_owned())
    });
    let ended = Ended {
        end,
        sent,
        unfinished,
    };
    (ended, accumulator)
}

/// Streams every round of the answer into `sink`, until the client's answer is settled, a
/// round fails, or the client goes away.
async fn run(
    app: Arc<App>,
    prepared: Prepared,
    mut call: Call,
    mut response: reqwest::Response,
    mut sink: Sink,
) {
    let mut merge = Merge::default();
    let mut rounds = Rounds::new(true);
    loop {
        let events = RoundEvents::new(Provider::Anthropic, response, call.started);
        let (ended, accumulator) = stream_round(events, &mut merge, &mut sink).await;
        let provider = Provider::Anthropic;
        if !close_round(&app, provider, &call, ended, &mut sink, rounds.count()).await {
            return;
        }
        let Some(message) = accumulator.finish() else {
            return;
        };
        let body = match settle_round(&mut rounds, &app, &prepared, &call, &message.content).await {
            Settled::Final => {
                let _ = sink
                    .send(merge.end(rounds.count() > 1, None, message.usage))
                    .await;
                return;
            }
            Settled::Without { capped, .. } => {
                let stop = (!merge.client_calls).then_some(END_TURN);
                let mut end = String::new();
                if capped {
                    end.push_str(&mc_agent_tools::round_cap::anthropic_events(
                        merge.next_index,
                    ));
                }
                end.push_str(&merge.end(true, stop, message.usage));
                let _ = sink.send(end).await;
                return;
            }
            Settled::Again(body) => body,
        };
        let hidden = rounds.count() - 1;
        let next = next_live_round(
            &app,
            Provider::Anthropic,
            &mut call,
            body,
            &mut sink,
            hidden,
        );
        let Some(next) = next.await else {
            return;
        };
        response = next;
        merge.next_round();
    }
}

/// The rounds of one answer merged into the one message the client reads.
#[derive(Default)]
struct Merge {
    /// Whether the client has its `message_start`.
    started: bool,
    /// The client's index of its next block.
    next_index: u64,
    /// This round's blocks: the upstream index to the client's, `None` for our calls.
    blocks: HashMap<u64, Option<u64>>,
    /// Whether the client got a call of its own this round.
    client_calls: bool,
    /// This round's `message_delta` and `message_stop`, held back.
    held: Vec<(SseEvent, StreamEvent)>,
}

impl Merge {
    /// What the client gets of one upstream event now, if anything.
    fn pass(&mut self, event: &SseEvent, mut decoded: StreamEvent) -> Option<String> {
        match decoded.kind {
            EventKind::MessageStart => {
                (!std::mem::replace(&mut self.started, true)).then(|| raw(event))
            }
            EventKind::MessageDelta | EventKind::MessageStop => {
                self.held.push((event.clone(), decoded));
                None
            }
            EventKind::ContentBlockStart => {
                let upstream = decoded.index?;
                let ours = matches!(&decoded.content_block, Some(ContentBlock::ToolUse(block)) if is_ours(&block.name));
                if ours {
                    self.blocks.insert(upstream, None);
                    return None;
                }
                self.client_calls |=
                    matches!(decoded.content_block, Some(ContentBlock::ToolUse(_)));
                let index = self.next_index;
                self.next_index += 1;
                self.blocks.insert(upstream, Some(index));
                Some(renumbered(event, &mut decoded, upstream, index))
            }
            EventKind::ContentBlockDelta | EventKind::ContentBlockStop => {
                let Some(upstream) = decoded.index else {
                    return Some(raw(event));
                };
                match self.blocks.get(&upstream) {
                    Some(Some(index)) => Some(renumbered(event, &mut decoded, upstream, *index)),
                    Some(None) => None,
                    // A block never started: the stream is broken, and the round fails.
                    None => Some(raw(event)),
                }
            }
            EventKind::Ping | EventKind::Error | EventKind::Other(_) => Some(raw(event)),
        }
    }

    /// Starts the next round of the same message.
    fn next_round(&mut self) {
        self.blocks.clear();
        self.client_calls = false;
        self.held.clear();
    }

    /// The held end of the last round: as sent for an answer the proxy did not change,
    /// otherwise with `stop` as its stop reason when given, and the last round's `usage`
    /// whole (the final call's figures describe the prompt the session now has).
    fn end(&self, changed: bool, stop: Option<&str>, usage: Option<Usage>) -> String {
        let mut out = String::new();
        for (event, decoded) in &self.held {
            if !changed || decoded.kind != EventKind::MessageDelta {
                out.push_str(&raw(event));
                continue;
            }
            let mut decoded = decoded.clone();
            if let (Some(stop), Some(Value::Object(delta))) = (stop, &mut decoded.delta) {
                delta.insert("stop_reason".to_owned(), Value::from(stop));
            }
            if let Some(usage) = &usage {
                decoded.usage = Some(usage.clone());
            }
            let data = String::from_utf8_lossy(&decoded.encode()).into_owned();
            out.push_str(&encode_event(event.event.as_deref(), &data));
        }
        out
    }
}

/// `event` with the client's block `index` in place of the upstream's.
fn renumbered(event: &SseEvent, decoded: &mut StreamEvent, upstream: u64, index: u64) -> String {
    if upstream == index {
        return raw(event);
    }
    decoded.index = Some(index);
    let data = String::from_utf8_lossy(&decoded.encode()).into_owned();
    encode_event(event.event.as_deref(), &data)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(data: serde_json::Value) -> (SseEvent, StreamEvent) {
        let data = data.to_string();
        let decoded = StreamEvent::decode(data.as_bytes(), usize::MAX).unwrap();
        let name = decoded.type_name().to_owned();
        let event = SseEvent {
            event: Some(name),
            data,
            id: None,
            retry: None,
            offset: 0,
        };
        (event, decoded)
    }

    fn pass(merge: &mut Merge, data: serde_json::Value) -> Option<serde_json::Value> {
        let (event, decoded) = event(data);
        let text = merge.pass(&event, decoded)?;
        let data = text.lines().find_map(|line| line.strip_prefix("data: "))?;
        Some(serde_json::from_str(data).unwrap())
    }

    fn start(index: u64, block: serde_json::Value) -> serde_json::Value {
        json!({"type": "content_block_start", "index": index, "content_block": block})
    }

    /// Two rounds become one message: our call is dropped, the second round's blocks are
    /// numbered after the first's, and only the first `message_start` goes out.
    #[test]
    fn rounds_merge_into_one_message_with_contiguous_blocks() {
        let mut merge = Merge::default();
        let shell = json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}});
        assert!(pass(&mut merge, shell.clone()).is_some());
        let text = json!({"type": "text", "text": ""});
        assert_eq!(
            pass(&mut merge, start(0, text.clone())).unwrap()["index"],
            0
        );
        let ours = json!({"type": "tool_use", "id": "t", "name": "ctx_search", "input": {}});
        assert_eq!(pass(&mut merge, start(1, ours)), None);
        let fragment = json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{}"}});
        assert_eq!(pass(&mut merge, fragment), None);
        let held = json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}});
        assert_eq!(pass(&mut merge, held), None);
        assert_eq!(pass(&mut merge, json!({"type": "message_stop"})), None);

        merge.next_round();
        assert_eq!(pass(&mut merge, shell), None, "one message_start only");
        let theirs = json!({"type": "tool_use", "id": "c", "name": "read_file", "input": {}});
        assert_eq!(pass(&mut merge, start(0, text)).unwrap()["index"], 1);
        assert_eq!(pass(&mut merge, start(1, theirs)).unwrap()["index"], 2);
        let stop = json!({"type": "content_block_stop", "index": 1});
        assert_eq!(pass(&mut merge, stop).unwrap()["index"], 2);
        assert!(merge.client_calls);
        let end = json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}});
        assert_eq!(pass(&mut merge, end), None);
        let mut usage = Usage::default();
        usage.input_tokens = Some(40);
        usage.output_tokens = Some(5);
        let out = merge.end(true, None, Some(usage));
        assert!(out.contains("\"input_tokens\":40"), "{out}");
        assert!(out.contains("\"stop_reason\":\"tool_use\""), "{out}");
    }
}
