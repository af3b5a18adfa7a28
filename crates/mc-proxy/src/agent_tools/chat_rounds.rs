//! The rounds the proxy runs for its own tools on the Chat Completions wire (the same rules
//! as [`super::anthropic_rounds`] for Anthropic).

use std::sync::Arc;

use axum::body::Body;
use axum::http::Response;
use bytes::Bytes;
use mc_wire::openai::{ChatContent, ChatMessage, ChatResponse, ContentPart, ToolCall};
use serde_json::{Value, json};

use super::chat::{ChatPrepared, ChatSplice, assistant_turn, chat_answer_key};
use super::execute::{execute, keep};
use super::reply::{Buffered, read_whole};
use super::round_call::{Call, Settled, broke_off, record};
use crate::app::App;
use crate::provider::Provider;
use mc_agent_tools::round_driver::{Next, RoundDriver};
use mc_agent_tools::run::{call_arguments, flagged_text};
use mc_agent_tools::{is_ours, round_cap};

/// The finish reason of an answer that ends the model's turn.
const STOP: &str = "stop";

/// Answers a Chat client from the successful upstream `response` to `call`
/// ([`super::round_call::answer`] on the other wire).
pub async fn answer_chat(
    app: Arc<App>,
    prepared: ChatPrepared,
    mut call: Call,
    mut response: reqwest::Response,
) -> Response<Body> {
    let mut rounds = ChatRounds::new(false);
    loop {
        let buffered = read_whole(Provider::OpenAi, response, call.started).await;
        record(&app, Provider::OpenAi, &call, &buffered);
        if let Some(reason) = &buffered.failed {
            return broke_off(Provider::OpenAi, reason);
        }
        let Some(answer) = chat_answer(&buffered) else {
            return buffered.verbatim();
        };
        let Some(message) = answer.message().cloned() else {
            return buffered.verbatim();
        };
        let body = match rounds.settle(&app, &prepared, &call, &message).await {
            Settled::Final => return buffered.verbatim(),
            Settled::Without { ours, capped } => {
                let notice = capped.then(|| rounds.notice_after(&message));
                return without_calls(buffered, answer, &ours, notice.as_deref());
            }
            Settled::Again(body) => body,
        };
        response = match call.next_round(&app, Provider::OpenAi, body, None).await {
            Ok(response) => response,
            Err(failure) => return failure.into_response(),
        };
    }
}

/// The hidden rounds of one client request on the Chat wire so far.
pub(super) struct ChatRounds {
    hidden: Vec<ChatMessage>,
    driver: RoundDriver,
    /// Whether the client sees each round as it streams, not only the last one.
    live: bool,
    /// The text of the hidden rounds the client saw (live only): it begins the content the
    /// client gets, and so the message it sends back.
    shown: String,
}

impl ChatRounds {
    /// The first round of an answer; `live` when the client sees each round as it
    /// streams.
    pub(super) fn new(live: bool) -> Self {
        Self {
            hidden: Vec::new(),
            driver: RoundDriver::first(),
            live,
            shown: String::new(),
        }
    }

    /// `message` as the client gets it: its content after the text the client saw of the
    /// hidden rounds, with `calls` as its calls.
    fn as_shown(&self, message: &ChatMessage, calls: Vec<ToolCall>) -> ChatMessage {
        let mut seen = message.clone();
        if !self.shown.is_empty() {
            let text = format!("{}{}", self.shown, text_of(message));
            seen.content = Some(ChatContent::Text(text));
        }
        seen.tool_calls = (!calls.is_empty()).then_some(calls);
        seen
    }

    /// The round limit's line as it follows `message`'s content in the client's answer
    /// (what the client saw of the hidden rounds, then `message`'s text).
    pub(super) fn notice_after(&self, message: &ChatMessage) -> String {
        round_cap::chat_suffix(&format!("{}{}", self.shown, text_of(message)))
    }

    /// How many rounds ran, this one included.
    pub(super) fn count(&self) -> usize {
        self.driver.count()
    }

    /// Decides what follows the round that answered `message` ([`super::round_call::Rounds::settle`]
    /// on this wire); [`Settled::Without`] holds the indexes of our calls among its calls.
    pub(super) async fn settle(
        &mut self,
        app: &App,
        prepared: &ChatPrepared,
        call: &Call,
        message: &ChatMessage,
    ) -> Settled {
        let calls = message.tool_calls.clone().unwrap_or_default();
        let ours: Vec<usize> = (0..calls.len())
            .filter(|&index| is_ours(&calls[index].function.name))
            .collect();
        let next = self.driver.next(ours.len(), calls.len() - ours.len());
        if next == Next::Final {
            let seen = self.as_shown(message, calls);
            if !self.hidden.is_empty()
                && let Some(key) = chat_answer_key(&seen)
            {
                // A client that saw text of the hidden rounds sends it back in this answer;
                // upstream, it stays in the rounds that wrote it.
                let full = (!self.shown.is_empty()).then(|| assistant_turn(message, Vec::new()));
                let splice = ChatSplice {
                    before: std::mem::take(&mut self.hidden),
                    full_answer: full,
                    client_answer: key,
                    results: Vec::new(),
                };
                keep(app, prepared.point.anchor(), splice).await;
            }
            return Settled::Final;
        }
        let runs: Vec<(String, String, Value)> = ours
            .iter()
            .map(|&index| {
                let function = &calls[index].function;
                let arguments = call_arguments(&function.arguments);
                (calls[index].id.clone(), function.name.clone(), arguments)
            })
            .collect();
        let answers = execute(app, &prepared.project, &call.planned.session, &runs).await;
        let results: Vec<ChatMessage> = runs
            .into_iter()
            .zip(answers)
            .map(|((id, _, _), answer)| {
                ChatMessage::tool_result(id, ChatContent::Text(flagged_text(answer)))
            })
            .collect();
        let full = assistant_turn(message, calls.clone());
        if let Next::HandBack { capped } = next {
            if capped {
                round_cap::warn(self.count(), "chat");
            }
            let theirs: Vec<_> = (0..calls.len())
                .filter(|index| !ours.contains(index))
                .map(|index| calls[index].clone())
                .collect();
            let mut seen = self.as_shown(message, theirs);
            if capped {
                append_text(&mut seen, &self.notice_after(message));
            }
            if let Some(key) = chat_answer_key(&seen) {
                let splice = ChatSplice {
                    before: std::mem::take(&mut self.hidden),
                    full_answer: Some(full),
                    client_answer: key,
                    results,
                };
                keep(app, prepared.point.anchor(), splice).await;
            }
            return Settled::Without { ours, capped };
        }
        if self.live {
            self.shown.push_str(&text_of(message));
        }
        self.hidden.push(full);
        self.hidden.extend(results);
        let mut request = prepared.request.clone();
        request.messages.extend(self.hidden.iter().cloned());
        // On the last round allowed, the model must answer in text.
        if next == (Next::Continue { last: true }) {
            request.rest.insert("tool_choice".to_owned(), json!("none"));
        }
        Settled::Again(Bytes::from(request.encode()))
    }
}

/// The text a message's content shows.
fn text_of(message: &ChatMessage) -> String {
    match &message.content {
        Some(ChatContent::Text(text)) => text.clone(),
        Some(ChatContent::Parts(parts)) => parts
            .iter()
            .filter_map(|part| match part {
                ContentPart::Text(part) => Some(part.text.as_str()),
                _ => None,
            })
            .collect(),
        None => String::new(),
    }
}

/// `message` with `suffix` after its content's text.
fn append_text(message: &mut ChatMessage, suffix: &str) {
    message.content = Some(match message.content.take() {
        None => ChatContent::Text(suffix.to_owned()),
        Some(ChatContent::Text(text)) => ChatContent::Text(text + suffix),
        Some(ChatContent::Parts(mut parts)) => {
            parts.push(ContentPart::text(suffix));
            ChatContent::Parts(parts)
        }
    });
}

/// The answer the body describes, when it parses.
fn chat_answer(buffered: &Buffered) -> Option<ChatResponse> {
    ChatResponse::decode(&buffered.body, usize::MAX).ok()
}

/// The answer without our calls (at `ours` in its calls), with the round limit's `notice`
/// after its text when the limit ended it.
fn without_calls(
    buffered: Buffered,
    mut answer: ChatResponse,
    ours: &[usize],
    notice: Option<&str>,
) -> Response<Body> {
    let keep_call = |index: usize| !ours.contains(&index);
    // With no call left for the client (the bound stopped the rounds), the answer says it
    // stopped: a client told `tool_calls` with no call to run would wait on one.
    let calls_left = answer
        .message()
        .and_then(|message| message.tool_calls.as_ref())
        .is_some_and(|calls| (0..calls.len()).any(keep_call));
    for choice in &mut answer.choices {
        if !calls_left {
            choice.finish_reason = Some(STOP.to_owned());
        }
        if let Some(calls) = choice.message.tool_calls.take() {
            let kept: Vec<_> = calls
                .into_iter()
                .enumerate()
                .filter(|(index, _)| keep_call(*index))
                .map(|(_, call)| call)
                .collect();
            choice.message.tool_calls = (!kept.is_empty()).then_some(kept);
        }
        if let Some(notice) = notice {
            append_text(&mut choice.message, notice);
        }
    }
    buffered.respond(Bytes::from(answer.encode()))
}
