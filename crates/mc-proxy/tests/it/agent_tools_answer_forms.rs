//! The hidden exchange goes back whatever form the client gives the answer it got: a Chat
//! tool-call message with `"content": null` (what OpenAI's streams produce and Pi sends),
//! `""`, no `content` key or a list; an Anthropic answer without its empty text block; a
//! Responses answer without its reasoning item or its items' `id` and `status`. Each time the
//! model first called one of our tools, then the client's; a form that lost the exchange sent
//! the upstream a history without our call, and the conversation forked.

use serde_json::{Value, json};

use crate::agent_tools as anthropic;
use crate::agent_tools_chat as chat;
use crate::agent_tools_responses as responses;
use crate::support::*;

/// The names of the calls in a Chat message.
fn chat_calls(message: &Value) -> Vec<&str> {
    message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|call| call["function"]["name"].as_str().unwrap())
        .collect()
}

/// One Chat conversation: a hidden `ctx_search` round, the client's `read_file` (whose
/// answer the upstream sends with `upstream_content`: `None` for `null`, as OpenAI does, or
/// `""`, as many compatible servers do in a stream's first chunk), its answer given back as
/// `form`, then one more turn. Returns the upstream messages of the last two calls, after
/// the head.
async fn chat_round_trip(
    form: &Value,
    upstream_content: Option<&str>,
    stream: bool,
) -> (Vec<Value>, Vec<Value>) {
    let read = chat::call("call_r", "read_file", json!({"path": "a.rs"}));
    let upstream = chat::scripted(vec![
        chat::answer(
            None,
            vec![chat::call("call_s", "ctx_search", json!({"query": "a.rs"}))],
        ),
        chat::answer(upstream_content, vec![read.clone()]),
        chat::answer(Some("It is empty."), vec![]),
        chat::answer(Some("You are welcome."), vec![]),
    ])
    .await;
    let proxy = chat::proxy(&upstream).await;
    let question = json!({"role": "user", "content": "What is in a.rs?"});
    let reply = chat::post_chat(
        &proxy,
        &chat::request(std::slice::from_ref(&question), stream),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(!reply.text().contains("ctx_search"));

    let mut client_turn = json!({"role": "assistant", "tool_calls": [read]});
    if !form.is_string() || form != "absent" {
        client_turn["content"] = form.clone();
    }
    let result = json!({"role": "tool", "tool_call_id": "call_r", "content": ""});
    let turns = [question, client_turn, result];
    let reply = chat::post_chat(&proxy, &chat::request(&turns, stream)).await;
    assert_eq!(reply.status, 200, "{form}: {}", reply.text());
    let mut later = turns.to_vec();
    later.push(json!({"role": "assistant", "content": "It is empty."}));
    later.push(json!({"role": "user", "content": "Thanks."}));
    let reply = chat::post_chat(&proxy, &chat::request(&later, stream)).await;
    assert_eq!(reply.status, 200, "{form}: {}", reply.text());

    assert_eq!(proxy.session_ids().len(), 1, "{form}: one session, no fork");
    let seen = upstream.seen();
    assert_eq!(seen.len(), 4, "{form}");
    let tail = |at: usize| seen[at].json()["messages"].as_array().unwrap()[chat::HEAD..].to_vec();
    let (second, third) = (tail(2), tail(3));
    proxy.shutdown().await;
    (second, third)
}

async fn chat_forms(stream: bool) {
    let forms = [
        Value::Null,
        json!(""),
        json!("absent"),
        json!([]),
        json!([{"type": "text", "text": ""}]),
    ];
    for (form, upstream_content) in forms
        .iter()
        .flat_map(|form| [(form, None), (form, Some(""))])
    {
        let (second, third) = chat_round_trip(form, upstream_content, stream).await;
        let calls: Vec<Vec<&str>> = second.iter().map(chat_calls).collect();
        assert_eq!(
            calls,
            [
                vec![],
                vec!["ctx_search"],
                vec![],
                vec!["read_file"],
                vec![]
            ],
            "{form}: our call and its result went back before the client's: {second:?}"
        );
        assert_eq!(second[2]["tool_call_id"], "call_s", "{form}");
        assert_eq!(second[4]["tool_call_id"], "call_r", "{form}");
        assert_eq!(
            third[..5],
            second[..],
            "{form}: the next call repeats the history"
        );
        if form.is_null() && upstream_content.is_none() {
            assert_eq!(
                second[3].get("content"),
                Some(&Value::Null),
                "a null content goes up as null: {}",
                second[3]
            );
        }
    }
}

#[tokio::test]
async fn chat_answers_in_every_content_form_get_the_hidden_exchange_back() {
    chat_forms(false).await;
}

#[tokio::test]
async fn streamed_chat_answers_in_every_content_form_get_the_hidden_exchange_back() {
    chat_forms(true).await;
}

/// An Anthropic answer that opened with an empty text block comes back without it (clients
/// drop empty blocks) or as given; the hidden round goes back either way.
#[tokio::test]
async fn an_anthropic_answer_without_its_empty_text_block_gets_the_hidden_exchange_back() {
    let read = anthropic::tool_use("toolu_r", "read_file", json!({"path": "a.rs"}));
    for keep_empty_text in [true, false] {
        let upstream = anthropic::scripted(vec![
            anthropic::message(
                "msg_1",
                vec![anthropic::tool_use(
                    "toolu_s",
                    "ctx_search",
                    json!({"query": "a.rs"}),
                )],
                "tool_use",
            ),
            anthropic::message("msg_2", vec![anthropic::text(""), read.clone()], "tool_use"),
            anthropic::message("msg_3", vec![anthropic::text("It is empty.")], "end_turn"),
        ])
        .await;
        let proxy = anthropic::proxy(&upstream, mc_core::config::ToolsMode::Proxy).await;
        let question = user("What is in a.rs?");
        post(
            &proxy,
            "/v1/messages",
            &[],
            &anthropic::request(std::slice::from_ref(&question), false),
        )
        .await;
        let answer = if keep_empty_text {
            vec![anthropic::text(""), read.clone()]
        } else {
            vec![read.clone()]
        };
        let turns = [
            question,
            json!({"role": "assistant", "content": answer}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_r", "content": ""}]}),
        ];
        let reply = post(
            &proxy,
            "/v1/messages",
            &[],
            &anthropic::request(&turns, false),
        )
        .await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let sent = upstream.seen()[2].json();
        let messages = sent["messages"].as_array().unwrap();
        assert!(
            sent.to_string().contains("toolu_s"),
            "empty text kept {keep_empty_text}: our call went back: {messages:?}"
        );
        anthropic::assert_calls_answered(messages);
        assert_eq!(proxy.session_ids().len(), 1, "one session, no fork");
        proxy.shutdown().await;
    }
}

/// A Responses answer given back without its reasoning item (a client that does not keep
/// `reasoning.encrypted_content`), or with its items' `id` and `status` dropped.
#[tokio::test]
async fn a_responses_answer_without_its_reasoning_or_ids_gets_the_hidden_exchange_back() {
    let reasoning =
        json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"});
    let mut read = responses::call("call_r", "read_file", json!({"path": "a.rs"}));
    read["id"] = json!("fc_1");
    read["status"] = json!("completed");
    let mut bare_read = read.clone();
    bare_read.as_object_mut().unwrap().remove("id");
    bare_read.as_object_mut().unwrap().remove("status");
    let forms = [
        vec![reasoning.clone(), read.clone()],
        vec![read.clone()],
        vec![reasoning.clone(), bare_read],
    ];
    for form in forms {
        let upstream = responses::scripted(vec![
            responses::answer(vec![responses::call(
                "call_s",
                "ctx_search",
                json!({"query": "a.rs"}),
            )]),
            responses::answer(vec![reasoning.clone(), read.clone()]),
            responses::answer(vec![responses::said("It is empty.")]),
        ])
        .await;
        let proxy = responses::proxy(&upstream).await;
        let question = responses::user("What is in a.rs?");
        responses::post(
            &proxy,
            &responses::request(std::slice::from_ref(&question), false),
        )
        .await;
        let mut turns = vec![question];
        turns.extend(form.iter().cloned());
        turns.push(responses::output("call_r", ""));
        let reply = responses::post(&proxy, &responses::request(&turns, false)).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let sent = upstream.seen()[2].json();
        let calls: Vec<&str> = sent["input"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|item| item["type"] == "function_call")
            .map(|item| item["call_id"].as_str().unwrap())
            .collect();
        assert_eq!(calls, ["call_s", "call_r"], "{form:?}");
        assert_eq!(
            proxy.session_ids().len(),
            1,
            "{form:?}: one session, no fork"
        );
        proxy.shutdown().await;
    }
}
