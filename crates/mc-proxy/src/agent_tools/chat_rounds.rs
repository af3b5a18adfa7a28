//! The rounds the proxy runs for its own tools on the Chat Completions wire (the same rules
//! as [`super::anthropic_rounds`] for Anthropic).

use std::sync::Arc;

use axum::body::Body;
use axum::http::Response;
use bytes::Bytes;
use mc_agent_tools::hidden_rounds::{ClientAnswer, HiddenRounds, OurCall, RoundWire};
use mc_agent_tools::run::{call_arguments, flagged_text};
use mc_agent_tools::{is_ours, round_cap};
use mc_engine::tools::ToolAnswer;
use mc_wire::openai::{ChatContent, ChatMessage, ChatResponse, ContentPart, ToolCall};

use super::chat::assistant_turn;
use super::reply::{Buffered, read_whole};
use super::round_call::{Call, Settled, broke_off, record};
use super::settle::{RoundPlace, settle};
use crate::app::App;
use crate::provider::Provider;
use mc_agent_tools::chat_exchange::ChatSplice;
use mc_agent_tools::chat_splice::{ChatPrepared, chat_answer_key};

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
        let body = match settle_round(&mut rounds, &app, &prepared, &call, &message).await {
            Settled::Final => return buffered.verbatim(),
            Settled::Without { ours, capped } => {
                let notice = capped.then(|| notice_after(rounds.shown(), &message));
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

/// Settles a round on this wire ([`settle`]): the next round is the prepared request with
/// the hidden rounds appended, `tool_choice` `none` on the last one allowed.
pub(super) async fn settle_round(
    rounds: &mut ChatRounds,
    app: &App,
    prepared: &ChatPrepared,
    call: &Call,
    message: &ChatMessage,
) -> Settled {
    let place = RoundPlace {
        point: &prepared.point,
        project: &prepared.project,
        session: &call.planned.session,
        wire: "chat",
    };
    let next = |hidden: &[ChatMessage], last: bool| prepared.next_round(hidden, last);
    settle(rounds, app, &place, message, next).await
}

/// The Chat wire's part in the rounds: an answer is the choice's message, what the client
/// was shown of the hidden rounds is their text.
pub(super) struct ChatWire;

/// The hidden rounds of one client request on the Chat wire.
pub(super) type ChatRounds = HiddenRounds<ChatWire>;

impl RoundWire for ChatWire {
    type Answer = ChatMessage;
    type Turn = ChatMessage;
    type Shown = String;
    type Splice = ChatSplice;

    fn calls(message: &ChatMessage) -> (Vec<usize>, usize) {
        let calls = message.tool_calls.as_deref().unwrap_or_default();
        let ours: Vec<usize> = (0..calls.len())
            .filter(|&index| is_ours(&calls[index].function.name))
            .collect();
        let theirs = calls.len() - ours.len();
        (ours, theirs)
    }

    fn our_calls(message: &ChatMessage, ours: &[usize]) -> Vec<OurCall> {
        let calls = message.tool_calls.as_deref().unwrap_or_default();
        ours.iter()
            .filter_map(|&index| calls.get(index))
            .map(|call| OurCall {
                id: call.id.clone(),
                name: call.function.name.clone(),
                arguments: call_arguments(&call.function.arguments),
            })
            .collect()
    }

    /// One `tool` message per call.
    fn results(calls: Vec<OurCall>, answers: Vec<ToolAnswer>) -> Vec<ChatMessage> {
        calls
            .into_iter()
            .zip(answers)
            .map(|(call, answer)| {
                ChatMessage::tool_result(call.id, ChatContent::Text(flagged_text(answer)))
            })
            .collect()
    }

    fn answer_turns(message: &ChatMessage) -> Vec<ChatMessage> {
        let calls = message.tool_calls.clone().unwrap_or_default();
        vec![assistant_turn(message, calls)]
    }

    fn show(shown: &mut String, message: &ChatMessage, _ours: &[usize]) {
        shown.push_str(&text_of(message));
    }

    fn shown_nothing(shown: &String) -> bool {
        shown.is_empty()
    }

    fn splice(
        before: Vec<ChatMessage>,
        full_answer: Option<Vec<ChatMessage>>,
        client: ClientAnswer<'_, Self>,
        results: Vec<ChatMessage>,
    ) -> Option<ChatSplice> {
        let calls = client.answer.tool_calls.as_deref().unwrap_or_default();
        let theirs: Vec<ToolCall> = (0..calls.len())
            .filter(|index| !client.ours.contains(index))
            .map(|index| calls[index].clone())
            .collect();
        let mut seen = as_shown(client.shown, client.answer, theirs);
        if client.capped {
            append_text(&mut seen, &notice_after(client.shown, client.answer));
        }
        Some(ChatSplice {
            before,
            full_answer: full_answer.and_then(|turns| turns.into_iter().next()),
            client_answer: chat_answer_key(&seen)?,
            results,
        })
    }
}

/// `message` as the client gets it: its content after the text the client saw of the
/// hidden rounds (`shown`), with `calls` as its calls.
fn as_shown(shown: &str, message: &ChatMessage, calls: Vec<ToolCall>) -> ChatMessage {
    let mut seen = message.clone();
    if !shown.is_empty() {
        let text = format!("{shown}{}", text_of(message));
        seen.content = Some(ChatContent::Text(text));
    }
    seen.tool_calls = (!calls.is_empty()).then_some(calls);
    seen
}

/// The round limit's line as it follows `message`'s content in the client's answer (what
/// the client saw of the hidden rounds, `shown`, then `message`'s text).
pub(super) fn notice_after(shown: &str, message: &ChatMessage) -> String {
    round_cap::chat_suffix(&format!("{shown}{}", text_of(message)))
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

#[cfg(test)]
mod tests {
    use mc_agent_tools::hidden_rounds::{AfterRun, Settle};
    use mc_wire::openai::ChatRole;
    use serde_json::{Value, json};

    use super::*;

    fn call(id: &str, name: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": name, "arguments": "{}"}})
    }

    fn answer(text: &str, calls: &[Value]) -> ChatMessage {
        let mut value = json!({"role": "assistant", "content": text});
        if !calls.is_empty() {
            value["tool_calls"] = Value::Array(calls.to_vec());
        }
        ChatMessage::decode(value.to_string().as_bytes()).unwrap()
    }

    /// A live client saw the hidden round's text; the final answer also calls one of the
    /// client's tools. Upstream, the answer stays as the model gave it, the client's call
    /// included, so the client's result that follows answers a call the provider knows.
    #[test]
    fn the_stored_final_answer_keeps_the_clients_calls() {
        let mut rounds = ChatRounds::new(true);
        let first = answer("Let me look. ", &[call("c1", "ctx_search")]);
        let Settle::Run(run) = rounds.settle(&first) else {
            panic!("our call runs");
        };
        let answers = vec![ToolAnswer::error("no store".to_owned())];
        assert!(matches!(
            rounds.after_run(&first, run, answers),
            AfterRun::Again { last: false }
        ));
        let last = answer("Reading it.", &[call("c2", "read_file")]);
        let Settle::Final { keep: Some(splice) } = rounds.settle(&last) else {
            panic!("the hidden round is stored");
        };
        let full = splice.full_answer.expect("the client saw the hidden text");
        assert_eq!(full.role, ChatRole::Assistant);
        let calls = full.tool_calls.expect("the client's call stays upstream");
        assert_eq!(calls[0].id, "c2");
        assert_eq!(splice.before.len(), 2);
        let seen = as_shown(rounds.shown(), &last, calls.clone());
        assert_eq!(Some(splice.client_answer), chat_answer_key(&seen));
    }
}
