//! The rounds the proxy runs with the model for its own tools on the Anthropic wire, and
//! what the client gets.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Response;
use mc_core::{ProjectId, SessionId};
use mc_wire::anthropic::{
    self, BlockContent, ContentBlock, MessageRole, MessagesResponse, ToolResultBlock,
};
use serde_json::Value;

use super::execute::{execute, keep};
use super::prepare::Prepared;
use super::reply::read_whole;
use super::round_call::{Call, Settled, broke_off, record};
use crate::app::App;
use crate::provider::Provider;
use mc_agent_tools::round_driver::{Next, RoundDriver};
use mc_agent_tools::splice::{Splice, client_answer_key};
use mc_agent_tools::{is_ours, round_cap};

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
        let body = match rounds.settle(&app, &prepared, &call, &message).await {
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

/// The hidden rounds of one client request on the Anthropic wire so far.
pub(super) struct Rounds {
    hidden: Vec<anthropic::Message>,
    driver: RoundDriver,
    /// Whether the client sees each round as it streams, not only the last one.
    live: bool,
    /// The blocks of the hidden rounds the client saw (live only): they begin the answer
    /// the client gets, and so the message it sends back.
    shown: Vec<ContentBlock>,
}

impl Rounds {
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

    /// Decides what follows the round that answered `message`: runs our calls in it, and
    /// stores the exchange the client will not see when the client's answer is settled.
    pub(super) async fn settle(
        &mut self,
        app: &App,
        prepared: &Prepared,
        call: &Call,
        message: &MessagesResponse,
    ) -> Settled {
        let ours: Vec<usize> = (0..message.content.len())
            .filter(|&index| {
                matches!(&message.content[index], ContentBlock::ToolUse(block) if is_ours(&block.name))
            })
            .collect();
        let next = self
            .driver
            .next(ours.len(), tool_calls(&message.content) - ours.len());
        if next == Next::Final {
            if !self.hidden.is_empty() {
                let answer = assistant(message.content.clone());
                // A client that saw blocks of the hidden rounds sends them back in this
                // answer; upstream, they stay in the rounds that wrote them.
                let seen = self.shown_with(message.content.iter());
                let splice = Splice {
                    before: std::mem::take(&mut self.hidden),
                    full_answer: (!self.shown.is_empty()).then_some(answer),
                    client_answer: client_answer_key(&assistant(seen)),
                    results: None,
                };
                keep(app, prepared.point.anchor(), splice).await;
            }
            return Settled::Final;
        }
        let results = run_tools(
            app,
            &prepared.project,
            &call.planned.session,
            &message.content,
            &ours,
        )
        .await;
        let full = assistant(message.content.clone());
        // Beside the client's calls, or past the bound (a model that calls our tools even
        // when told not to): the client gets the answer without our calls.
        if let Next::HandBack { capped } = next {
            if capped {
                round_cap::warn(self.count(), "anthropic");
            }
            let mut seen = self.shown_with(
                message
                    .content
                    .iter()
                    .enumerate()
                    .filter(|(index, _)| !ours.contains(index))
                    .map(|(_, block)| block),
            );
            if capped {
                seen.push(round_cap::anthropic_block());
            }
            let splice = Splice {
                before: std::mem::take(&mut self.hidden),
                full_answer: Some(full),
                client_answer: client_answer_key(&assistant(seen)),
                results: Some(results),
            };
            keep(app, prepared.point.anchor(), splice).await;
            return Settled::Without { ours, capped };
        }
        if self.live {
            self.shown.extend(
                message
                    .content
                    .iter()
                    .filter(|block| !matches!(block, ContentBlock::ToolUse(_)))
                    .cloned(),
            );
        }
        self.hidden.push(full);
        self.hidden.push(results);
        // On the last round allowed, the model must answer in text.
        let last = next == Next::Continue { last: true };
        Settled::Again(prepared.next_round(&self.hidden, last))
    }
}

impl Rounds {
    /// The answer as the client gets it: what it saw of the hidden rounds, then `blocks`.
    fn shown_with<'a>(&self, blocks: impl Iterator<Item = &'a ContentBlock>) -> Vec<ContentBlock> {
        self.shown.iter().cloned().chain(blocks.cloned()).collect()
    }
}

fn assistant(content: Vec<ContentBlock>) -> anthropic::Message {
    anthropic::Message::new(MessageRole::Assistant, BlockContent::Blocks(content))
}

fn tool_calls(content: &[ContentBlock]) -> usize {
    content
        .iter()
        .filter(|block| matches!(block, ContentBlock::ToolUse(_)))
        .count()
}

/// Runs our calls among `content` (at `ours`); the user turn of their results, in call
/// order.
async fn run_tools(
    app: &App,
    project: &Option<ProjectId>,
    session: &Option<SessionId>,
    content: &[ContentBlock],
    ours: &[usize],
) -> anthropic::Message {
    let calls: Vec<(String, String, Value)> = ours
        .iter()
        .filter_map(|&index| match &content[index] {
            ContentBlock::ToolUse(block) => {
                Some((block.id.clone(), block.name.clone(), block.input.clone()))
            }
            _ => None,
        })
        .collect();
    let answers = execute(app, project, session, &calls).await;
    let blocks = calls
        .into_iter()
        .zip(answers)
        .map(|((id, _, _), answer)| {
            ContentBlock::ToolResult(ToolResultBlock::new(
                id,
                Some(BlockContent::Text(answer.text)),
                answer.is_error,
            ))
        })
        .collect();
    anthropic::Message::new(MessageRole::User, BlockContent::Blocks(blocks))
}
