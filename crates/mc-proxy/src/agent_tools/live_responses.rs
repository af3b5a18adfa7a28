//! A streamed Responses answer in proxy tools mode, sent to the client as it arrives
//! ([`super::live_anthropic`], [`super::live_chat`] on the other wires).
//!
//! Each round's events go through [`ResponsesMerge`]: an item's events pass at once with
//! its output index renumbered to the client's; every event of a call to one of our tools
//! (known by its `response.output_item.added`, which comes first) is dropped; the end event
//! (`response.completed` / `response.incomplete`) waits until the round is settled. Later
//! rounds continue the same response: their lifecycle openings are dropped, their items'
//! indexes follow the earlier rounds', and the sequence numbers run on. The end event the
//! client gets names the first round's response and lists every item the client saw, with
//! the last round's usage (the figures of the prompt the session now has).

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::Response;
use mc_wire::responses::{EventAccumulator, Item, StreamEvent};
use mc_wire::sse::{SseEvent, encode_event};
use serde_json::Value;

use super::live::{RoundEvents, Sink, live_response, raw};
use super::live_round::{Ended, close_round, next_live_round};
use super::responses_rounds::{ResponsesRounds, settle_round, without};
use super::round_call::{Call, Settled};
use crate::app::App;
use crate::provider::Provider;
use mc_agent_tools::is_ours;
use mc_agent_tools::responses_splice::ResponsesPrepared;

/// The end event of a round that ended well.
const COMPLETED: &str = "response.completed";

/// Starts answering the client live from the successful streamed `response` to `call`.
pub fn answer_live(
    app: Arc<App>,
    prepared: ResponsesPrepared,
    call: Call,
    response: reqwest::Response,
) -> Response<Body> {
    let (sink, out) = live_response(response.status(), response.headers(), false);
    tokio::spawn(run(app, prepared, call, response, sink));
    out
}

/// Streams one round's events to the client as `merge` lets them through, until the round
/// ends or the client goes away: how it ended, and the events it carried.
async fn stream_round(
    mut events: RoundEvents,
    merge: &mut ResponsesMerge,
    sink: &mut Sink,
) -> (Ended, EventAccumulator) {
    let mut accumulator = EventAccumulator::new();
    let mut sent = Ok(());
    while let Some(event) = events.next_unless_gone(sink, &mut sent).await {
        let text = match StreamEvent::decode(event.data.as_bytes(), usize::MAX) {
            Ok(decoded) => {
                accumulator.push(&decoded);
                merge.pass(&event, decoded)
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
    let unfinished = (!accumulator.is_finished())
        .then(|| "the upstream stream ended before its end event".to_owned());
    let ended = Ended {
        end,
        sent,
        unfinished,
    };
    (ended, accumulator)
}

/// Streams every round of the answer into `sink` (see [`super::live_anthropic`]).
async fn run(
    app: Arc<App>,
    prepared: ResponsesPrepared,
    mut call: Call,
    mut response: reqwest::Response,
    mut sink: Sink,
) {
    let mut merge = ResponsesMerge::default();
    let mut rounds = ResponsesRounds::new(true);
    loop {
        let events = RoundEvents::new(Provider::OpenAiResponses, response, call.started);
        let (ended, accumulator) = stream_round(events, &mut merge, &mut sink).await;
        let answer = accumulator.finish();
        let provider = Provider::OpenAiResponses;
        if !close_round(&app, provider, &call, ended, &mut sink, rounds.count()).await {
            return;
        }
        let output = answer
            .as_ref()
            .map(|answer| answer.output_items().to_vec())
            .unwrap_or_default();
        let completed = merge.held_kind() == Some(COMPLETED);
        if !completed {
            // An incomplete answer (the output limit, a content filter) is the client's to
            // read as it is: no tool of ours runs on a cut call.
            let _ = sink.send(merge.end(rounds.shown(), &output)).await;
            return;
        }
        let body = match settle_round(&mut rounds, &app, &prepared, &call, &output).await {
            Settled::Final => {
                let _ = sink.send(merge.end(rounds.shown(), &output)).await;
                return;
            }
            Settled::Without { ours, capped } => {
                let mut kept = without(&output, &ours);
                let mut end = String::new();
                if capped {
                    end.push_str(&merge.added(mc_agent_tools::round_cap::responses_events(
                        merge.next_index,
                    )));
                    kept.push(mc_agent_tools::round_cap::responses_item());
                }
                end.push_str(&merge.end(rounds.shown(), &kept));
                let _ = sink.send(end).await;
                return;
            }
            Settled::Again(body) => body,
        };
        let hidden = rounds.count() - 1;
        let next = next_live_round(&app, provider, &mut call, body, &mut sink, hidden);
        let Some(next) = next.await else {
            return;
        };
        response = next;
        merge.next_round();
    }
}

fn encoded(event: &SseEvent, decoded: &StreamEvent) -> String {
    encode_event(
        event.event.as_deref(),
        &String::from_utf8_lossy(&decoded.encode()),
    )
}

/// The rounds of one answer merged into the one response the client reads.
#[derive(Default)]
struct ResponsesMerge {
    /// The response's id: the first round's.
    id: Option<String>,
    /// Whether a round before this one streamed.
    later: bool,
    /// Whether the client's copy differs from the upstream's so far (an event dropped or
    /// renumbered).
    altered: bool,
    /// This round's items: the upstream output index to the client's, `None` for ours.
    routes: HashMap<u64, Option<u64>>,
    /// The client's index of its next item.
    next_index: u64,
    /// The client's next sequence number.
    next_sequence: u64,
    /// This round's end event, held back.
    held: Option<(SseEvent, StreamEvent)>,
}

impl ResponsesMerge {
    /// What the client gets of one upstream event now, if anything.
    fn pass(&mut self, event: &SseEvent, mut decoded: StreamEvent) -> Option<String> {
        if let Some(response) = &decoded.response
            && self.id.is_none()
        {
            self.id.clone_from(&response.id);
        }
        let kind = decoded.kind.as_str();
        if self.later && is_opening(kind) {
            return None;
        }
        if matches!(kind, COMPLETED | "response.incomplete") {
            self.held = Some((event.clone(), decoded));
            return None;
        }
        let mut changed = false;
        if let Some(upstream) = decoded.output_index {
            let route = match self.routes.get(&upstream) {
                Some(route) => *route,
                None => {
                    let ours = matches!(&decoded.item, Some(Item::FunctionCall(call)) if is_ours(&call.name));
                    let route = (!ours).then_some(self.next_index);
                    if route.is_some() {
                        self.next_index += 1;
                    }
                    self.routes.insert(upstream, route);
                    route
                }
            };
            let Some(index) = route else {
                self.altered = true;
                return None;
            };
            if index != upstream {
                decoded.output_index = Some(index);
                changed = true;
            }
        }
        changed |= self.renumber(&mut decoded);
        self.altered |= changed;
        Some(if changed {
            encoded(event, &decoded)
        } else {
            raw(event)
        })
    }

    /// Gives `decoded` the client's next sequence number, when it carries one; whether that
    /// changed it.
    fn renumber(&mut self, decoded: &mut StreamEvent) -> bool {
        let Some(number) = decoded.rest.get_mut("sequence_number") else {
            return false;
        };
        let next = self.next_sequence;
        self.next_sequence += 1;
        if number.as_u64() == Some(next) {
            return false;
        }
        *number = Value::from(next);
        true
    }

    /// Events the proxy adds to the stream (each a JSON event with its `type`), numbered in
    /// the client's sequence when the stream is numbered; the client's copy no longer
    /// matches the upstream's.
    fn added(&mut self, events: Vec<Value>) -> String {
        self.altered = true;
        let numbered = self.next_sequence > 0;
        events
            .into_iter()
            .map(|mut event| {
                if numbered {
                    event["sequence_number"] = Value::from(self.next_sequence);
                    self.next_sequence += 1;
                }
                let name = event["type"].as_str().map(str::to_owned);
                encode_event(name.as_deref(), &event.to_string())
            })
            .collect()
    }

    /// The kind of the end event held back this round, if one came.
    fn held_kind(&self) -> Option<&str> {
        self.held.as_ref().map(|(_, decoded)| decoded.kind.as_str())
    }

    /// Starts the next round of the same response.
    fn next_round(&mut self) {
        self.later = true;
        self.altered = true;
        self.routes.clear();
        self.held = None;
    }

    /// The held end event: as sent for an answer the proxy did not change, otherwise under
    /// the response's id, with `shown` (the items the client saw of the hidden rounds) and
    /// `output` (this round's items it gets) as the output.
    fn end(&mut self, shown: &[Item], output: &[Item]) -> String {
        let Some((event, mut decoded)) = self.held.take() else {
            return String::new();
        };
        let renumbered = self.renumber(&mut decoded);
        if !self.altered && !renumbered {
            return raw(&event);
        }
        if let Some(response) = &mut decoded.response {
            response.id.clone_from(&self.id);
            if self.altered {
                response.output = Some(shown.iter().chain(output).cloned().collect());
            }
        }
        encoded(&event, &decoded)
    }
}

/// The lifecycle events that open a response: a later round's are not the client's.
fn is_opening(kind: &str) -> bool {
    matches!(
        kind,
        "response.created" | "response.in_progress" | "response.queued"
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn sse(data: &Value) -> (SseEvent, StreamEvent) {
        let data = data.to_string();
        let decoded = StreamEvent::decode(data.as_bytes(), usize::MAX).unwrap();
        let event = SseEvent {
            event: decoded.kind.clone().into(),
            data,
            id: None,
            retry: None,
            offset: 0,
        };
        (event, decoded)
    }

    fn pass(merge: &mut ResponsesMerge, data: Value) -> Option<Value> {
        let (event, decoded) = sse(&data);
        let text = merge.pass(&event, decoded)?;
        Some(data_of(&text))
    }

    fn data_of(text: &str) -> Value {
        let line = text.lines().find_map(|line| line.strip_prefix("data: "));
        serde_json::from_str(line.unwrap()).unwrap()
    }

    fn added(index: u64, sequence: u64, item: Value) -> Value {
        json!({"type": "response.output_item.added", "output_index": index, "sequence_number": sequence, "item": item})
    }

    /// Our call's events are dropped and the client's item renumbered; a later round does
    /// not open the response again, its items follow the first round's and the sequence
    /// runs on; the end waits and lists what the client saw under the first id.
    #[test]
    fn rounds_merge_into_one_response() {
        let mut merge = ResponsesMerge::default();
        let created = json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "status": "in_progress", "output": []}});
        assert_eq!(pass(&mut merge, created.clone()), Some(created));
        let ours =
            json!({"type": "function_call", "call_id": "c1", "name": "ctx_note", "arguments": ""});
        assert_eq!(pass(&mut merge, added(0, 1, ours)), None);
        let delta = json!({"type": "response.function_call_arguments.delta", "output_index": 0, "sequence_number": 2, "delta": "{}"});
        assert_eq!(pass(&mut merge, delta), None);
        let text = json!({"type": "message", "role": "assistant", "content": []});
        let got = pass(&mut merge, added(1, 3, text)).unwrap();
        assert_eq!(
            (got["output_index"].clone(), got["sequence_number"].clone()),
            (json!(0), json!(1))
        );
        let completed = json!({"type": "response.completed", "sequence_number": 4, "response": {"id": "resp_1", "status": "completed", "output": []}});
        assert_eq!(pass(&mut merge, completed), None);
        assert_eq!(merge.held_kind(), Some(COMPLETED));

        merge.next_round();
        let reopened = json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_2", "status": "in_progress", "output": []}});
        assert_eq!(pass(&mut merge, reopened), None);
        let answer = json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]});
        let got = pass(&mut merge, added(0, 1, answer.clone())).unwrap();
        assert_eq!(
            (got["output_index"].clone(), got["sequence_number"].clone()),
            (json!(1), json!(2))
        );
        let completed = json!({"type": "response.completed", "sequence_number": 2, "response": {"id": "resp_2", "status": "completed", "output": [answer.clone()], "usage": {"input_tokens": 9}}});
        assert_eq!(pass(&mut merge, completed), None);
        let shown: Item =
            serde_json::from_value(json!({"type": "message", "role": "assistant", "content": []}))
                .unwrap();
        let last: Item = serde_json::from_value(answer).unwrap();
        let end = data_of(&merge.end(&[shown], &[last]));
        assert_eq!(end["response"]["id"], "resp_1");
        assert_eq!(end["sequence_number"], 3);
        assert_eq!(end["response"]["output"].as_array().unwrap().len(), 2);
        assert_eq!(end["response"]["usage"]["input_tokens"], 9);
    }

    /// A round the proxy did not change ends with the upstream's own bytes.
    #[test]
    fn an_unchanged_answer_ends_verbatim() {
        let mut merge = ResponsesMerge::default();
        let text = json!({"type": "message", "role": "assistant", "content": []});
        assert!(pass(&mut merge, added(0, 0, text.clone())).is_some());
        let completed = json!({"type": "response.completed", "sequence_number": 1, "response": {"id": "r", "status": "completed", "output": [text.clone()]}});
        let (event, decoded) = sse(&completed);
        assert_eq!(merge.pass(&event, decoded), None);
        let item: Item = serde_json::from_value(text).unwrap();
        assert_eq!(merge.end(&[], &[item]), raw(&event));
    }
}
