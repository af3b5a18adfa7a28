//! The agent tools served inside the proxy on the OpenAI Responses wire: hidden rounds reach
//! the client as one response (JSON or one stream), a mixed answer shows the client only its
//! own call, the stored exchange goes back upstream byte for byte, and the rounds stop at
//! the bound.

use axum::body::Body;
use axum::http::{Method, Response};
use mc_core::config::{Config, ToolsMode};
use serde_json::{Value, json};

use crate::support::*;

pub async fn proxy(upstream: &Upstream) -> Proxy {
    let mut config = Config::default();
    config.historian.enabled = false;
    config.tools.mode = ToolsMode::Proxy;
    Proxy::start_with_config(settings(&upstream.url()), config).await
}

pub fn request(turns: &[Value], stream: bool) -> Value {
    let mut input = vec![json!({"type": "message", "role": "developer", "content": [
        {"type": "input_text", "text": "You are a careful coding agent."}]})];
    input.extend_from_slice(turns);
    json!({
        "model": "gpt-5",
        "stream": stream,
        "store": false,
        "input": input,
        "tools": [{"type": "function", "name": "read_file", "description": "Reads a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}],
    })
}

pub fn user(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

pub fn said(text: &str) -> Value {
    json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
}

pub fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"type": "function_call", "call_id": id, "name": name, "arguments": arguments.to_string()})
}

pub fn output(id: &str, text: &str) -> Value {
    json!({"type": "function_call_output", "call_id": id, "output": text})
}

pub async fn post(proxy: &Proxy, body: &Value) -> Reply {
    send(
        Method::POST,
        &proxy.url("/v1/responses"),
        &[
            ("content-type", "application/json"),
            ("x-magic-context-project", "proj-responses"),
        ],
        body.to_string(),
    )
    .await
}

/// A completed response whose output is `items`.
pub fn answer(items: Vec<Value>) -> Value {
    json!({"id": "resp_up", "object": "response", "status": "completed", "model": "gpt-5",
        "output": items,
        "usage": {"input_tokens": 30, "output_tokens": 7, "total_tokens": 37,
            "input_tokens_details": {"cached_tokens": 0}}})
}

/// `answer` as the event stream a provider sends: each item added, grown and done, every
/// event numbered.
pub fn stream_of(answer: &Value) -> String {
    let mut events: Vec<Value> = Vec::new();
    let mut opening = answer.clone();
    opening["status"] = json!("in_progress");
    opening["output"] = json!([]);
    opening.as_object_mut().unwrap().remove("usage");
    events.push(json!({"type": "response.created", "response": opening}));
    for (index, item) in answer["output"].as_array().unwrap().iter().enumerate() {
        let mut empty = item.clone();
        if item["type"] == "function_call" {
            empty["arguments"] = json!("");
            events.push(
                json!({"type": "response.output_item.added", "output_index": index, "item": empty}),
            );
            events.push(json!({"type": "response.function_call_arguments.delta", "output_index": index, "delta": item["arguments"]}));
        } else {
            empty["content"] = json!([]);
            events.push(
                json!({"type": "response.output_item.added", "output_index": index, "item": empty}),
            );
            let text = &item["content"][0]["text"];
            events.push(json!({"type": "response.output_text.delta", "output_index": index, "content_index": 0, "delta": text}));
        }
        events.push(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        );
    }
    events.push(json!({"type": "response.completed", "response": answer}));
    events
        .into_iter()
        .enumerate()
        .map(|(number, mut event)| {
            event["sequence_number"] = json!(number);
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap()
            )
        })
        .collect()
}

pub async fn scripted(answers: Vec<Value>) -> Upstream {
    Upstream::replying(move |seen: &Seen, index| -> Response<Body> {
        let answer = &answers[index.min(answers.len() - 1)];
        if seen.json()["stream"] == json!(true) {
            sse_response(stream_of(answer))
        } else {
            json_response(200, answer)
        }
    })
    .await
}

/// The output items the client got: the JSON body's, or the stream's (checked for
/// contiguous output indexes, increasing sequence numbers, and an end event listing the same
/// items under one response id).
fn received(reply: &Reply) -> Vec<Value> {
    if !reply.text().starts_with("event:") {
        return reply.json()["output"].as_array().unwrap().clone();
    }
    let mut items: Vec<Value> = Vec::new();
    let mut ids = Vec::new();
    let mut last_sequence = None;
    let mut end = None;
    for (_, event) in sse_events(&reply.body) {
        let sequence = event["sequence_number"].as_u64().unwrap();
        assert!(
            last_sequence.is_none_or(|last| sequence == last + 1),
            "{event}"
        );
        last_sequence = Some(sequence);
        if let Some(id) = event["response"]["id"].as_str() {
            ids.push(id.to_owned());
        }
        match event["type"].as_str().unwrap() {
            "response.output_item.done" => {
                assert_eq!(event["output_index"], json!(items.len()), "{event}");
                items.push(event["item"].clone());
            }
            "response.completed" => end = Some(event["response"]["output"].clone()),
            _ => {}
        }
    }
    assert_eq!(end, Some(json!(items)), "the end event lists what streamed");
    ids.dedup();
    assert_eq!(ids.len(), 1, "one response: {ids:?}");
    items
}

fn names(items: &[Value]) -> Vec<&str> {
    items
        .iter()
        .filter(|item| item["type"] == "function_call")
        .map(|item| item["name"].as_str().unwrap())
        .collect()
}

/// Where the user message `item` sits in an upstream request's input (its text carries a
/// tag there).
fn position(input: &[Value], item: &Value) -> usize {
    let text = item["content"][0]["text"].as_str().unwrap();
    input
        .iter()
        .position(|sent| {
            sent["role"] == "user"
                && sent["content"][0]["text"]
                    .as_str()
                    .is_some_and(|sent| sent.ends_with(text))
        })
        .unwrap_or_else(|| panic!("{item} not in {input:?}"))
}

async fn hidden_rounds(stream: bool) {
    let upstream = scripted(vec![
        answer(vec![call(
            "call_w",
            "ctx_memory",
            json!({"action": "write", "category": "NAMING", "content": "Crates are kebab-case."}),
        )]),
        answer(vec![call(
            "call_s",
            "ctx_search",
            json!({"query": "kebab"}),
        )]),
        answer(vec![said("Kebab-case.")]),
        answer(vec![said("You are welcome.")]),
    ])
    .await;
    let proxy = proxy(&upstream).await;
    let question = user("How are crates named?");
    let reply = post(&proxy, &request(std::slice::from_ref(&question), stream)).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let got = received(&reply);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["content"][0]["text"], "Kebab-case.");

    let seen = upstream.seen();
    assert_eq!(seen.len(), 3);
    let third = seen[2].json();
    let tools: Vec<&str> = third["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "read_file",
            "ctx_reduce",
            "ctx_expand",
            "ctx_note",
            "ctx_memory",
            "ctx_search"
        ]
    );
    let input = third["input"].as_array().unwrap();
    assert!(
        input[1]["content"].to_string().contains("## Context tools"),
        "{}",
        input[1]
    );
    let at = position(input, &question);
    assert_eq!(input.len(), at + 5, "{input:?}");
    assert_eq!(input[at + 1]["name"], "ctx_memory");
    assert_eq!(input[at + 2]["call_id"], "call_w");
    assert_eq!(input[at + 3]["name"], "ctx_search");
    assert!(input[at + 4].to_string().contains("Crates are kebab-case."));

    let echoed = if stream {
        got[0].clone()
    } else {
        said("Kebab-case.")
    };
    let second = [question.clone(), echoed, user("Thanks.")];
    post(&proxy, &request(&second, stream)).await;
    let seen = upstream.seen();
    assert_eq!(seen.len(), 4);
    let later = seen[3].json();
    let later_input = later["input"].as_array().unwrap();
    let later_at = position(later_input, &question);
    for offset in 1..5 {
        assert_eq!(later_input[later_at + offset], input[at + offset]);
        let bytes = input[at + offset].to_string();
        assert!(
            seen[3]
                .body
                .windows(bytes.len())
                .any(|window| window == bytes.as_bytes()),
            "item {offset} after the question repeated byte for byte"
        );
    }
    assert!(
        later_input[later_at + 5]["content"][0]["text"]
            .as_str()
            .unwrap()
            .ends_with("Kebab-case.")
    );
    proxy.shutdown().await;
}

#[tokio::test]
async fn responses_hidden_rounds_reach_the_client_as_one_answer() {
    hidden_rounds(false).await;
}

#[tokio::test]
async fn responses_hidden_rounds_reach_a_streaming_client_as_one_stream() {
    hidden_rounds(true).await;
}

async fn mixed(stream: bool) {
    let upstream = scripted(vec![
        answer(vec![
            said("Noting, then reading."),
            call(
                "call_ours",
                "ctx_note",
                json!({"action": "write", "content": "Check the README."}),
            ),
            call("call_client", "read_file", json!({"path": "a.rs"})),
        ]),
        answer(vec![said("Read it.")]),
    ])
    .await;
    let proxy = proxy(&upstream).await;
    let question = user("Read a.rs.");
    let reply = post(&proxy, &request(std::slice::from_ref(&question), stream)).await;
    let got = received(&reply);
    assert_eq!(names(&got), ["read_file"]);
    assert!(!reply.text().contains("ctx_note"));

    let mut turns = vec![question.clone()];
    turns.extend(got);
    turns.push(output("call_client", "fn main() {}"));
    post(&proxy, &request(&turns, stream)).await;
    let sent = upstream.seen()[1].json();
    let input = sent["input"].as_array().unwrap();
    let at = position(input, &question);
    let after: Vec<&Value> = input[at + 1..].iter().collect();
    assert_eq!(after.len(), 5, "{after:?}");
    assert_eq!(after[1]["name"], "ctx_note");
    assert_eq!(after[2]["name"], "read_file");
    assert_eq!(after[3]["call_id"], "call_ours");
    assert_eq!(after[4]["call_id"], "call_client");
    proxy.shutdown().await;
}

#[tokio::test]
async fn a_mixed_responses_answer_shows_the_client_only_its_own_call() {
    mixed(false).await;
}

#[tokio::test]
async fn a_mixed_streamed_responses_answer_shows_the_client_only_its_own_call() {
    mixed(true).await;
}

#[tokio::test]
async fn responses_rounds_stop_at_the_bound_with_tools_refused() {
    let upstream = scripted(vec![answer(vec![call(
        "call_n",
        "ctx_search",
        json!({"query": "again"}),
    )])])
    .await;
    let proxy = proxy(&upstream).await;
    for (round, stream) in [false, true].into_iter().enumerate() {
        let reply = post(&proxy, &request(&[user("Search forever.")], stream)).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let items = received(&reply);
        assert_eq!(items.len(), 1, "only the limit's line: {items:?}");
        assert_eq!(items[0]["type"], "message");
        assert!(
            items[0]["content"][0]["text"]
                .as_str()
                .is_some_and(|text| text.contains("after 8 rounds")),
            "{items:?}"
        );
        let seen = upstream.seen();
        assert_eq!(seen.len(), 8 * (round + 1));
        assert_eq!(seen[seen.len() - 1].json()["tool_choice"], "none");
    }
    proxy.shutdown().await;
}

/// A client that offers our tools itself (an MCP server of ours, by name or inside a
/// `namespace` tool as Codex offers them) gets nothing added.
#[tokio::test]
async fn a_responses_client_with_our_mcp_tools_gets_none_added() {
    let upstream = scripted(vec![answer(vec![said("Hi.")])]).await;
    let proxy = proxy(&upstream).await;
    let flat = json!({"type": "function", "name": "mcp__magic-context__ctx_search", "parameters": {"type": "object"}});
    let namespace = json!({"type": "namespace", "name": "mcp__magic_context", "tools": [
        {"type": "function", "name": "ctx_search", "parameters": {"type": "object"}}]});
    for (index, ours) in [flat, namespace].into_iter().enumerate() {
        let mut body = request(&[user("Hello.")], false);
        body["tools"].as_array_mut().unwrap().push(ours);
        post(&proxy, &body).await;
        let sent = upstream.seen()[index].json();
        assert_eq!(sent["tools"].as_array().unwrap().len(), 2, "{sent}");
        assert!(!sent["input"].to_string().contains("## Context tools"));
    }
    proxy.shutdown().await;
}

/// Under `auto`, Codex (known by its session header) is left to the MCP server its setup
/// registers, even when no tool list shows it (Codex can hide MCP tools behind its tool
/// search); another Responses client gets the proxy's tools.
#[tokio::test]
async fn auto_leaves_codex_to_mcp_and_serves_other_responses_clients() {
    let upstream = scripted(vec![answer(vec![said("Hi.")])]).await;
    let mut config = Config::default();
    config.historian.enabled = false;
    let proxy = Proxy::start_with_config(settings(&upstream.url()), config).await;
    let body = request(&[user("Hello.")], false).to_string();
    for (header, served) in [("session-id", false), ("x-other", true)] {
        send(
            Method::POST,
            &proxy.url("/v1/responses"),
            &[("content-type", "application/json"), (header, "thread-1")],
            body.clone(),
        )
        .await;
        let sent = upstream.seen().last().unwrap().json();
        let tools = sent["tools"].as_array().unwrap().len();
        assert_eq!(tools == 6, served, "{header}: {sent}");
    }
    proxy.shutdown().await;
}

/// A hidden round's text streams to the client, which sends it back as part of its answer;
/// upstream it stays in the round that wrote it, before our call and its result.
#[tokio::test]
async fn text_a_streaming_client_saw_of_a_hidden_round_stays_in_its_round() {
    let upstream = scripted(vec![
        answer(vec![
            said("Let me look."),
            call("call_s", "ctx_search", json!({"query": "indent"})),
        ]),
        answer(vec![said("Tabs.")]),
        answer(vec![said("Noted.")]),
    ])
    .await;
    let proxy = proxy(&upstream).await;
    let question = user("Indent style?");
    let reply = post(&proxy, &request(std::slice::from_ref(&question), true)).await;
    let got = received(&reply);
    let texts: Vec<&str> = got
        .iter()
        .map(|item| item["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["Let me look.", "Tabs."]);
    let first_rounds = upstream.seen()[1].json();
    let input = first_rounds["input"].as_array().unwrap();
    let at = position(input, &question);

    let mut turns = vec![question.clone()];
    turns.extend(got);
    turns.push(user("Thanks."));
    post(&proxy, &request(&turns, true)).await;
    let later = upstream.seen()[2].json();
    let later_input = later["input"].as_array().unwrap();
    let later_at = position(later_input, &question);
    assert_eq!(later_input[later_at + 1], input[at + 1], "the round's text");
    assert_eq!(later_input[later_at + 2]["name"], "ctx_search");
    assert_eq!(later_input[later_at + 3]["call_id"], "call_s");
    assert!(
        later_input[later_at + 4]["content"][0]["text"]
            .as_str()
            .unwrap()
            .ends_with("Tabs.")
    );
    assert_eq!(later_input.len(), later_at + 6, "{later_input:?}");
    proxy.shutdown().await;
}
