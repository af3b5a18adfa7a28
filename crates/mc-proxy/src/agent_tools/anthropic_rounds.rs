//! The rounds the proxy runs with the model for its own tools on the Anthropic wire, and
//! what the client gets.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Response;
use mc_agent_tools::hidden_rounds::{ClientAnswer, HiddenRounds, OurCall, RoundWire};
use mc_agent_tools::splice::{Splice, client_answer_key};
use mc_agent_tools::{is_ours, round_cap};
use mc_engine::tools::ToolAnswer;
use mc_wire::anthropic::{self, BlockContent, ContentBlock, MessageRole, ToolResultBlock};

use super::reply::read_whole;
use super::round_call::{Call, Settled, broke_off, record};
use super::settle::{RoundPlace, settle};
use crate::app::App;
use crate::provider::Provider;
use mc_agent_tools::anthropic_splice::Prepared;

/// Answers the client from the successful upstream `response` to `call`: runs our tools
/// while the model calls only them, stores what the client will not see, and returns the
/// final answer, or the answer without our calls when the client has calls of its own. A
/// JSON answer is read whole here; a stream goes to the client live
/// ([`super::live_anthropic`]).
pub async fn answer(
    app: Arc<App>,
    prepared: Prepared,
    mut call: Call,
    mut response: reqwest::Response,
) -> Response<Body> {
    let mut rounds = Rounds::new(false);
    loop {
        let buffered = read_whole(Provider::Anthropic, response, call.started).await;
        record(&app, Provider::Anthropic, &call, &buffered);
        if let Some(reason) = &buffered.failed {
            return broke_off(Provider::Anthropic, reason);
        }
        let Some(message) = buffered.message() else {
            return buffered.verbatim();
        };
        let body = match settle_round(&mut rounds, &app, &prepared, &call, &message.content).await {
            Settled::Final => return buffered.verbatim(),
            Settled::Without { ours, capped } => {
                return buffered.without_blocks(message, &ours, capped);
            }
            Settled::Again(body) => body,
        };
        response = match call.next_round(&app, Provider::Anthropic, body, None).await {
            Ok(response) => response,
            Err(failure) => return failure.into_response(),
        };
    }
}

/// Settles a round on this wire ([`settle`]): the next round is the prepared request with
/// the hidden rounds appended.
pub(super) async fn settle_round(
    rounds: &mut Rounds,
    app: &App,
    prepared: &Prepared,
    call: &Call,
    content: &[ContentBlock],
) -> Settled {
    let place = RoundPlace {
        point: &prepared.point,
        project: &prepared.project,
        session: &call.planned.session,
        wire: "anthropic",
    };
    let next = |hidden: &[anthropic::Message], last| prepared.next_round(hidden, last);
    settle(rounds, app, &place, content, next).await
}

/// The Anthropic wire's part in the rounds: an answer is a message's content blocks.
pub(super) struct AnthropicWire;

/// The hidden rounds of one client request on the Anthropic wire.
pub(super) type Rounds = HiddenRounds<AnthropicWire>;

impl RoundWire for AnthropicWire {
    type Answer = [ContentBlock];
    type Turn = anthropic::Message;
    type Shown = Vec<ContentBlock>;
    type Splice = Splice;

    fn calls(content: &[ContentBlock]) -> (Vec<usize>, usize) {
        let ours: Vec<usize> = (0..content.len())
            .filter(|&index| {
                matches!(&content[index], ContentBlock::ToolUse(block) if is_ours(&block.name))
            })
            .collect();
        let calls = content
            .iter()
            .filter(|block| matches!(block, ContentBlock::ToolUse(_)))
            .count();
        let theirs = calls - ours.len();
        (ours, theirs)
    }

    fn our_calls(content: &[ContentBlock], ours: &[usize]) -> Vec<OurCall> {
        ours.iter()
            .filter_map(|&index| match &content[index] {
                ContentBlock::ToolUse(block) => Some(OurCall {
                    id: block.id.clone(),
                    name: block.name.clone(),
                    arguments: block.input.clone(),
                }),
                _ => None,
            })
            .collect()
    }

    /// One user turn holding every result, in call order.
    fn results(calls: Vec<OurCall>, answers: Vec<ToolAnswer>) -> Vec<anthropic::Message> {
        let blocks = calls
            .into_iter()
            .zip(answers)
            .map(|(call, answer)| {
                ContentBlock::ToolResult(ToolResultBlock::new(
                    call.id,
                    Some(BlockContent::Text(answer.text)),
                    answer.is_error,
                ))
            })
            .collect();
        vec![anthropic::Message::new(
            MessageRole::User,
            BlockContent::Blocks(blocks),
        )]
    }

    fn answer_turns(content: &[ContentBlock]) -> Vec<anthropic::Message> {
        vec![assistant(content.to_vec())]
    }

    fn show(shown: &mut Vec<ContentBlock>, content: &[ContentBlock], ours: &[usize]) {
        shown.extend(without_blocks(content, ours));
    }

    fn shown_nothing(shown: &Vec<ContentBlock>) -> bool {
        shown.is_empty()
    }

    fn splice(
        before: Vec<anthropic::Message>,
        full_answer: Option<Vec<anthropic::Message>>,
        client: ClientAnswer<'_, Self>,
        results: Vec<anthropic::Message>,
    ) -> Option<Splice> {
        let mut seen = client.shown.clone();
        seen.extend(without_blocks(client.answer, client.ours));
        if client.capped {
            seen.push(round_cap::anthropic_block());
        }
        Some(Splice {
            before,
            full_answer: full_answer.and_then(|turns| turns.into_iter().next()),
            client_answer: client_answer_key(&assistant(seen)),
            results: results.into_iter().next(),
        })
    }
}

/// The blocks of `content` but those at `ours`.
fn without_blocks<'a>(
    content: &'a [ContentBlock],
    ours: &'a [usize],
) -> impl Iterator<Item = ContentBlock> + 'a {
    content
        .iter()
        .enumerate()
        .filter(|(index, _)| !ours.contains(index))
        .map(|(_, block)| block.clone())
}

fn assistant(content: Vec<ContentBlock>) -> anthropic::Message {
    anthropic::Message::new(MessageRole::Assistant, BlockContent::Blocks(content))
}
