//! The rounds the proxy runs for its own tools on the Responses wire (the same rules as
//! [`super::anthropic_rounds`] for Anthropic).

use std::sync::Arc;

use axum::body::Body;
use axum::http::Response;
use bytes::Bytes;
use mc_wire::responses::{Content, Input, Item, OutputKind, ResponsesResponse, ToolOutputItem};
use serde_json::{Value, json};

use super::execute::{execute, keep};
use super::reply::read_whole;
use super::responses::{ResponsesPrepared, ResponsesSplice, items_answer_key};
use super::round_call::{Call, Settled, broke_off, record};
use crate::app::App;
use crate::provider::Provider;
use mc_agent_tools::round_driver::{Next, RoundDriver};
use mc_agent_tools::run::{call_arguments, flagged_text};
use mc_agent_tools::{is_ours, round_cap};

/// Answers a Responses client from the successful upstream `response` to `call`
/// ([`super::round_call::answer`] on the other wire).
pub async fn answer_responses(
    app: Arc<App>,
    prepared: ResponsesPrepared,
    mut call: Call,
    mut response: reqwest::Response,
) -> Response<Body> {
    let mut rounds = ResponsesRounds::new(false);
    loop {
        let buffered = read_whole(Provider::OpenAiResponses, response, call.started).await;
        record(&app, Provider::OpenAiResponses, &call, &buffered);
        if let Some(reason) = &buffered.failed {
            return broke_off(Provider::OpenAiResponses, reason);
        }
        let Ok(mut answer) = ResponsesResponse::decode(&buffered.body, usize::MAX) else {
            return buffered.verbatim();
        };
        let output = answer.output_items().to_vec();
        let body = match rounds.settle(&app, &prepared, &call, &output).await {
            Settled::Final => return buffered.verbatim(),
            Settled::Without { ours, capped } => {
                let mut kept = without(&output, &ours);
                if capped {
                    kept.push(round_cap::responses_item());
                }
                answer.output = Some(kept);
                return buffered.respond(Bytes::from(answer.encode()));
            }
            Settled::Again(body) => body,
        };
        response = match call
            .next_round(&app, Provider::OpenAiResponses, body, None)
            .await
        {
            Ok(response) => response,
            Err(failure) => return failure.into_response(),
        };
    }
}

/// The hidden rounds of one client request on the Responses wire so far.
pub(super) struct ResponsesRounds {
    hidden: Vec<Item>,
    driver: RoundDriver,
    /// Whether the client sees each round as it streams, not only the last one.
    live: bool,
    /// The items of the hidden rounds the client saw (live only): they begin the answer the
    /// client gets, and so the items it sends back.
    shown: Vec<Item>,
}

impl ResponsesRounds {
    /// The first round of an answer; `live` when the client sees each round as it
    /// streams.
    pub(super) fn new(live: bool) -> Self {
        Self {
            hidden: Vec::new(),
            driver: RoundDriver::first(),
            live,
            shown: Vec::new(),
        }
    }

    /// How many rounds ran, this one included.
    pub(super) fn count(&self) -> usize {
        self.driver.count()
    }

    /// The items the client has been shown of the hidden rounds.
    pub(super) fn shown(&self) -> &[Item] {
        &self.shown
    }

    /// Decides what follows the round whose output is `output` ([`super::round_call::Rounds::settle`]
    /// on this wire); [`Settled::Without`] holds the indexes of our calls among the items.
    pub(super) async fn settle(
        &mut self,
        app: &App,
        prepared: &ResponsesPrepared,
        call: &Call,
        output: &[Item],
    ) -> Settled {
        let ours = our_calls(output);
        let next = self.driver.next(ours.len(), client_calls(output));
        if next == Next::Final {
            let seen = self.shown_with(output, &[]);
            if !self.hidden.is_empty()
                && let Some(key) = items_answer_key(&seen)
            {
                // A client that saw items of the hidden rounds sends them back in this
                // answer; upstream, they stay in the rounds that wrote them.
                let full = (!self.shown.is_empty()).then(|| output.to_vec());
                let splice = ResponsesSplice {
                    before: std::mem::take(&mut self.hidden),
                    full_answer: full,
                    client_answer: key,
                    client_items: seen.len(),
                    results: Vec::new(),
                };
                keep(app, prepared.point.anchor(), splice).await;
            }
            return Settled::Final;
        }
        let runs: Vec<(String, String, Value)> = ours
            .iter()
            .filter_map(|&index| match &output[index] {
                Item::FunctionCall(call) => Some((
                    call.call_id.clone(),
                    call.name.clone(),
                    call_arguments(&call.arguments),
                )),
                _ => None,
            })
            .collect();
        let answers = execute(app, &prepared.project, &call.planned.session, &runs).await;
        let results: Vec<Item> = runs
            .into_iter()
            .zip(answers)
            .map(|((id, _, _), answer)| {
                let output = Content::Text(flagged_text(answer));
                Item::ToolOutput(ToolOutputItem::new(OutputKind::Function, id, output))
            })
            .collect();
        if let Next::HandBack { capped } = next {
            if capped {
                round_cap::warn(self.count(), "responses");
            }
            let mut seen = self.shown_with(output, &ours);
            if capped {
                seen.push(round_cap::responses_item());
            }
            if let Some(key) = items_answer_key(&seen) {
                let splice = ResponsesSplice {
                    before: std::mem::take(&mut self.hidden),
                    full_answer: Some(output.to_vec()),
                    client_answer: key,
                    client_items: seen.len(),
                    results,
                };
                keep(app, prepared.point.anchor(), splice).await;
            }
            return Settled::Without { ours, capped };
        }
        if self.live {
            self.shown.extend(without(output, &ours));
        }
        self.hidden.extend(output.iter().cloned());
        self.hidden.extend(results);
        let mut request = prepared.request.clone();
        if let Some(Input::Items(items)) = &mut request.input {
            items.extend(self.hidden.iter().cloned());
        }
        // On the last round allowed, the model must answer in text.
        if next == (Next::Continue { last: true }) {
            request.rest.insert("tool_choice".to_owned(), json!("none"));
        }
        Settled::Again(Bytes::from(request.encode()))
    }

    /// The answer as the client gets it: what it saw of the hidden rounds, then `output`
    /// without the items at `ours`.
    fn shown_with(&self, output: &[Item], ours: &[usize]) -> Vec<Item> {
        let mut seen = self.shown.clone();
        seen.extend(without(output, ours));
        seen
    }
}

/// The indexes of the calls to our tools among `output`.
fn our_calls(output: &[Item]) -> Vec<usize> {
    (0..output.len())
        .filter(|&index| matches!(&output[index], Item::FunctionCall(call) if is_ours(&call.name)))
        .collect()
}

/// How many of `output`'s calls are the client's.
fn client_calls(output: &[Item]) -> usize {
    output
        .iter()
        .filter(|item| match item {
            Item::FunctionCall(call) => !is_ours(&call.name),
            Item::CustomToolCall(_) => true,
            _ => false,
        })
        .count()
}

/// `output` without the items at `ours`.
pub(super) fn without(output: &[Item], ours: &[usize]) -> Vec<Item> {
    output
        .iter()
        .enumerate()
        .filter(|(index, _)| !ours.contains(index))
        .map(|(_, item)| item.clone())
        .collect()
}
