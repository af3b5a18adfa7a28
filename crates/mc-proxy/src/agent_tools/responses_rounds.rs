//! The rounds the proxy runs for its own tools on the Responses wire (the same rules as
//! [`super::anthropic_rounds`] for Anthropic).

use std::sync::Arc;

use axum::body::Body;
use axum::http::Response;
use bytes::Bytes;
use mc_agent_tools::hidden_rounds::{ClientAnswer, HiddenRounds, OurCall, RoundWire};
use mc_agent_tools::run::{call_arguments, flagged_text};
use mc_agent_tools::{is_ours, round_cap};
use mc_engine::tools::ToolAnswer;
use mc_wire::responses::{Content, Item, OutputKind, ResponsesResponse, ToolOutputItem};

use super::reply::read_whole;
use super::round_call::{Call, Settled, broke_off, record};
use super::settle::{RoundPlace, settle};
use crate::app::App;
use crate::provider::Provider;
use mc_agent_tools::responses_exchange::{ResponsesSplice, items_answer_key};
use mc_agent_tools::responses_splice::ResponsesPrepared;

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
        let body = match settle_round(&mut rounds, &app, &prepared, &call, &output).await {
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

/// Settles a round on this wire ([`settle`]): the next round is the prepared request with
/// the hidden rounds' items appended, `tool_choice` `none` on the last one allowed.
pub(super) async fn settle_round(
    rounds: &mut ResponsesRounds,
    app: &App,
    prepared: &ResponsesPrepared,
    call: &Call,
    output: &[Item],
) -> Settled {
    let place = RoundPlace {
        point: &prepared.point,
        project: &prepared.project,
        session: &call.planned.session,
        wire: "responses",
    };
    let next = |hidden: &[Item], last: bool| prepared.next_round(hidden, last);
    settle(rounds, app, &place, output, next).await
}

/// The Responses wire's part in the rounds: an answer is a response's output items.
pub(super) struct ResponsesWire;

/// The hidden rounds of one client request on the Responses wire.
pub(super) type ResponsesRounds = HiddenRounds<ResponsesWire>;

impl RoundWire for ResponsesWire {
    type Answer = [Item];
    type Turn = Item;
    type Shown = Vec<Item>;
    type Splice = ResponsesSplice;

    fn calls(output: &[Item]) -> (Vec<usize>, usize) {
        (our_calls(output), client_calls(output))
    }

    fn our_calls(output: &[Item], ours: &[usize]) -> Vec<OurCall> {
        ours.iter()
            .filter_map(|&index| match output.get(index)? {
                Item::FunctionCall(call) => Some(OurCall {
                    id: call.call_id.clone(),
                    name: call.name.clone(),
                    arguments: call_arguments(&call.arguments),
                }),
                _ => None,
            })
            .collect()
    }

    /// One function output item per call.
    fn results(calls: Vec<OurCall>, answers: Vec<ToolAnswer>) -> Vec<Item> {
        calls
            .into_iter()
            .zip(answers)
            .map(|(call, answer)| {
                let output = Content::Text(flagged_text(answer));
                Item::ToolOutput(ToolOutputItem::new(OutputKind::Function, call.id, output))
            })
            .collect()
    }

    fn answer_turns(output: &[Item]) -> Vec<Item> {
        output.to_vec()
    }

    fn show(shown: &mut Vec<Item>, output: &[Item], ours: &[usize]) {
        shown.extend(without(output, ours));
    }

    fn shown_nothing(shown: &Vec<Item>) -> bool {
        shown.is_empty()
    }

    fn splice(
        before: Vec<Item>,
        full_answer: Option<Vec<Item>>,
        client: ClientAnswer<'_, Self>,
        results: Vec<Item>,
    ) -> Option<ResponsesSplice> {
        let mut seen = client.shown.clone();
        seen.extend(without(client.answer, client.ours));
        if client.capped {
            seen.push(round_cap::responses_item());
        }
        Some(ResponsesSplice {
            before,
            full_answer,
            client_answer: items_answer_key(&seen)?,
            client_items: seen.len(),
            results,
        })
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
