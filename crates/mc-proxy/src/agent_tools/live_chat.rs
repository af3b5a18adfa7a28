//! A streamed Chat Completions answer in proxy tools mode, sent to the client as it arrives
//! ([`super::live_anthropic`] on the other wire).
//!
//! Each round's chunks go through [`ChatMerge`]: content passes at once; a call to one of
//! our tools (known by the name in its first fragment, where providers send it) never
//! reaches the client, and the client's own calls are renumbered so their indexes stay
//! contiguous; the finish reason, the usage chunk and `[DONE]` wait until the round is
//! settled. Later rounds continue the same completion: their chunks carry the first
//! round's id, and the role is not announced again.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::Response;
use mc_wire::openai::{ChatChunk, ChatDelta, ChunkAccumulator};
use mc_wire::sse::{SseEvent, encode_event};

use super::chat_rounds::{ChatRounds, notice_after, settle_round};
use super::live::{RoundEvents, Sink, live_response, raw};
use super::live_round::{Ended, close_round, next_live_round};
use super::round_call::{Call, Settled};
use crate::app::App;
use crate::provider::Provider;
use mc_agent_tools::chat_splice::ChatPrepared;
use mc_agent_tools::is_ours;

const DONE: &str = "[DONE]";

/// The finish reason of an answer that ends the model's turn.
const STOP: &str = "stop";

/// Starts answering the client live from the successful streamed `response` to `call`.
pub fn answer_live(
    app: Arc<App>,
    prepared: ChatPrepared,
    call: Call,
    response: reqwest::Response,
) -> Response<Body> {
    let hide = call.planned.hide_usage_chunk;
    let (sink, out) = live_response(response.status(), response.headers(), hide);
    tokio::spawn(run(app, prepared, call, response, sink));
    out
}

/// Streams every round of the answer into `sink` (see [`super::live_anthropic`]).
async fn run(
    app: Arc<App>,
    prepared: ChatPrepared,
    mut call: Call,
    mut response: reqwest::Response,
    mut sink: Sink,
) {
    let mut merge = ChatMerge::default();
    let mut rounds = ChatRounds::new(true);
    loop {
        let mut events = RoundEvents::new(Provider::OpenAi, response, call.started);
        let mut accumulator = ChunkAccumulator::new();
        let mut sent = Ok(());
        while let Some(event) = events.next_unless_gone(&sink, &mut sent).await {
            if event.data == DONE {
                merge.done = Some(event);
                continue;
            }
            let text = match ChatChunk::decode(event.data.as_bytes(), usize::MAX) {
                Ok(chunk) => {
                    accumulator.push(&chunk);
                    merge.pass(&event, chunk)
                }
                Err(_) => Some(raw(&event)),
            };
            if let Some(text) = text {
                sent = sink.send(text).await;
                if sent.is_err() {
                    break;
                }
            }
        }
        let end = events.finish();
        let answer = accumulator.finish();
        let unfinished = answer
            .finish_reason()
            .is_none()
            .then(|| "the upstream stream ended before a finish reason".to_owned());
        let provider = Provider::OpenAi;
        let ended = Ended {
            end,
            sent,
            unfinished,
        };
        if !close_round(&app, provider, &call, ended, &mut sink, rounds.count()).await {
            return;
        }
        let Some(message) = answer.message() else {
            let _ = sink.send(merge.end(rounds.count() > 1, None)).await;
            return;
        };
        let body = match settle_round(&mut rounds, &app, &prepared, &call, message).await {
            Settled::Final => {
                let _ = sink.send(merge.end(rounds.count() > 1, None)).await;
                return;
            }
            Settled::Without { capped, .. } => {
                let reason = (!merge.client_calls).then_some(STOP);
                let mut end = String::new();
                if capped {
                    end.push_str(&merge.content_chunk(&notice_after(rounds.shown(), message)));
                }
                end.push_str(&merge.end(true, reason));
                let _ = sink.send(end).await;
                return;
            }
            Settled::Again(body) => body,
        };
        let hidden = rounds.count() - 1;
        let next = next_live_round(&app, Provider::OpenAi, &mut call, body, &mut sink, hidden);
        let Some(next) = next.await else {
            return;
        };
        response = next;
        merge.next_round();
    }
}

fn encoded(event: &SseEvent, chunk: &ChatChunk) -> String {
    encode_event(
        event.event.as_deref(),
        &String::from_utf8_lossy(&chunk.encode()),
    )
}

/// The rounds of one answer merged into the one completion the client reads.
#[derive(Default)]
struct ChatMerge {
    /// The completion's id: the first round's.
    id: Option<String>,
    /// Whether a round before this one streamed.
    later: bool,
    /// This round's calls: the upstream index to the client's, `None` for ours.
    calls: HashMap<u64, Option<u64>>,
    /// The client's index of its next call this round.
    next_call: u64,
    /// Whether the client got a call of its own this round.
    client_calls: bool,
    /// This round's chunk with the finish reason, held back.
    finish: Option<(SseEvent, ChatChunk)>,
    /// This round's usage-only chunk, held back.
    usage: Option<(SseEvent, ChatChunk)>,
    /// This round's `[DONE]`, held back.
    done: Option<SseEvent>,
}

impl ChatMerge {
    /// What the client gets of one upstream chunk now, if anything.
    fn pass(&mut self, event: &SseEvent, mut chunk: ChatChunk) -> Option<String> {
        if self.id.is_none() {
            self.id.clone_from(&chunk.id);
        }
        let mut changed = false;
        if self.id.is_some() && chunk.id != self.id {
            chunk.id.clone_from(&self.id);
            changed = true;
        }
        if chunk.choices.is_empty() && chunk.usage.is_some() {
            self.usage = Some((event.clone(), chunk));
            return None;
        }
        if chunk
            .choices
            .iter()
            .any(|choice| choice.finish_reason.is_some())
        {
            self.finish = Some((event.clone(), chunk.clone()));
            for choice in &mut chunk.choices {
                choice.finish_reason = None;
            }
            chunk.usage = None;
            changed = true;
        }
        for delta in chunk
            .choices
            .iter_mut()
            .filter_map(|choice| choice.delta.as_mut())
        {
            if self.later && delta.role.take().is_some() {
                changed = true;
            }
            changed |= self.route_calls(delta);
        }
        let silent = chunk.usage.is_none()
            && chunk
                .choices
                .iter()
                .all(|choice| choice.delta.as_ref().is_none_or(is_empty));
        match (changed, silent) {
            (true, true) => None,
            (true, false) => Some(encoded(event, &chunk)),
            (false, _) => Some(raw(event)),
        }
    }

    /// Removes our calls from `delta` and renumbers the client's; whether it changed.
    fn route_calls(&mut self, delta: &mut ChatDelta) -> bool {
        let Some(calls) = delta.tool_calls.take() else {
            return false;
        };
        let count = calls.len();
        let mut changed = false;
        let kept: Vec<_> = calls
            .into_iter()
            .filter_map(|mut call| {
                let upstream = call.index.unwrap_or(0);
                let name = call.function.as_ref().and_then(|f| f.name.as_deref());
                let route = match self.calls.get(&upstream) {
                    Some(route) => *route,
                    None => {
                        let route = (!name.is_some_and(is_ours)).then_some(self.next_call);
                        if route.is_some() {
                            self.client_calls = true;
                            self.next_call += 1;
                        }
                        self.calls.insert(upstream, route);
                        route
                    }
                };
                let index = route?;
                if call.index != Some(index) {
                    call.index = Some(index);
                    changed = true;
                }
                Some(call)
            })
            .collect();
        changed |= kept.len() != count;
        delta.tool_calls = (!kept.is_empty()).then_some(kept);
        changed
    }

    /// Starts the next round of the same completion.
    fn next_round(&mut self) {
        self.later = true;
        self.calls.clear();
        self.next_call = 0;
        self.client_calls = false;
        self.finish = None;
        self.usage = None;
        self.done = None;
    }

    /// A chunk of the completion carrying `content` alone, shaped as this round's held
    /// finish chunk (its id, model and choices), for text the proxy adds at the end.
    fn content_chunk(&self, content: &str) -> String {
        let Some((event, chunk)) = &self.finish else {
            return String::new();
        };
        let mut chunk = chunk.clone();
        chunk.id.clone_from(&self.id);
        chunk.usage = None;
        let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&chunk.encode()) else {
            return String::new();
        };
        if let Some(choices) = value.get_mut("choices").and_then(|c| c.as_array_mut()) {
            for choice in choices {
                choice["delta"] = serde_json::json!({"content": content});
                choice["finish_reason"] = serde_json::Value::Null;
            }
        }
        encode_event(event.event.as_deref(), &value.to_string())
    }

    /// The held end of the last round: as sent for an answer the proxy did not change,
    /// otherwise under the completion's id and with `reason` as the finish reason when
    /// given. The usage is the last round's (the final call's figures describe the prompt
    /// the session now has).
    fn end(&self, changed: bool, reason: Option<&str>) -> String {
        let mut out = String::new();
        if let Some((event, chunk)) = &self.finish {
            let mut chunk = chunk.clone();
            chunk.id.clone_from(&self.id);
            for choice in &mut chunk.choices {
                if let Some(delta) = &mut choice.delta {
                    clear(delta);
                }
                if let (Some(reason), Some(_)) = (reason, &choice.finish_reason) {
                    choice.finish_reason = Some(reason.to_owned());
                }
            }
            out.push_str(&encoded(event, &chunk));
        }
        if let Some((event, chunk)) = &self.usage {
            if changed {
                let mut chunk = chunk.clone();
                chunk.id.clone_from(&self.id);
                out.push_str(&encoded(event, &chunk));
            } else {
                out.push_str(&raw(event));
            }
        }
        if let Some(event) = &self.done {
            out.push_str(&raw(event));
        }
        out
    }
}

/// Whether a delta carries nothing for the client.
fn is_empty(delta: &ChatDelta) -> bool {
    delta.role.is_none()
        && delta.content.as_deref().is_none_or(str::is_empty)
        && delta.tool_calls.is_none()
        && delta.rest.values().all(serde_json::Value::is_null)
}

/// Empties a delta: what it carried went to the client earlier.
fn clear(delta: &mut ChatDelta) {
    delta.role = None;
    delta.content = None;
    delta.tool_calls = None;
    delta.rest.clear();
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pass(merge: &mut ChatMerge, data: serde_json::Value) -> Option<serde_json::Value> {
        let data = data.to_string();
        let chunk = ChatChunk::decode(data.as_bytes(), usize::MAX).unwrap();
        let event = SseEvent {
            event: None,
            data,
            id: None,
            retry: None,
            offset: 0,
        };
        let text = merge.pass(&event, chunk)?;
        let data = text.strip_prefix("data: ")?.trim_end();
        Some(serde_json::from_str(data).unwrap())
    }

    fn chunk(id: &str, delta: serde_json::Value, finish: serde_json::Value) -> serde_json::Value {
        json!({"id": id, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    }

    /// Our call is dropped and the client's renumbered; a later round keeps the first id and
    /// does not announce the role again; the finish waits for the end.
    #[test]
    fn rounds_merge_into_one_completion() {
        let mut merge = ChatMerge::default();
        let calls = json!({"tool_calls": [
            {"index": 0, "id": "a", "function": {"name": "ctx_note", "arguments": ""}},
            {"index": 1, "id": "b", "function": {"name": "read_file", "arguments": ""}},
        ]});
        let got = pass(&mut merge, chunk("one", calls, json!(null))).unwrap();
        let sent = &got["choices"][0]["delta"]["tool_calls"];
        assert_eq!(
            sent,
            &json!([{"index": 0, "id": "b", "function": {"name": "read_file", "arguments": ""}}])
        );
        let ours_more = json!({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]});
        assert_eq!(pass(&mut merge, chunk("one", ours_more, json!(null))), None);
        assert_eq!(
            pass(&mut merge, chunk("one", json!({}), json!("tool_calls"))),
            None
        );
        assert!(merge.client_calls);

        merge.next_round();
        let hello = json!({"role": "assistant", "content": "Hi"});
        let got = pass(&mut merge, chunk("two", hello, json!(null))).unwrap();
        assert_eq!(got["id"], "one");
        assert_eq!(got["choices"][0]["delta"], json!({"content": "Hi"}));
        assert_eq!(
            pass(&mut merge, chunk("two", json!({}), json!("stop"))),
            None
        );
        let end = merge.end(true, None);
        let data: serde_json::Value =
            serde_json::from_str(end.strip_prefix("data: ").unwrap().trim_end()).unwrap();
        assert_eq!(data["id"], "one");
        assert_eq!(data["choices"][0]["finish_reason"], "stop");
    }
}
