//! The agent tools served inside the proxy (`tools.mode` proxy): a client with no MCP server
//! of ours, an upstream scripted to call our tools, and what each side sees.

use axum::body::Body;
use axum::http::Response;
use mc_core::ProjectId;
use mc_core::config::{Config, ToolsMode};
use mc_store::MemoryStatus;
use serde_json::{Value, json};

use crate::support::*;

const PROJECT: &str = "proj-tools";

pub async fn proxy(upstream: &Upstream, mode: ToolsMode) -> Proxy {
    let mut config = Config::default();
    config.historian.enabled = false;
    config.tools.mode = mode;
    Proxy::start_with_config(settings(&upstream.url()), config).await
}

/// The client's own tool.
fn read_file_tool() -> Value {
    json!({"name": "read_file", "description": "Reads a file.", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}})
}

pub fn request(messages: &[Value], stream: bool) -> Value {
    let mut body = anthropic_request(messages);
    body["tools"] = json!([read_file_tool()]);
    if stream {
        body["stream"] = json!(true);
    }
    body
}

pub fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

pub fn text(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// A whole answer with `content`, ending for `stop`.
pub fn message(id: &str, content: Vec<Value>, stop: &str) -> Value {
    json!({
        "id": id, "type": "message", "role": "assistant", "model": MODEL,
        "content": content, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 30, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 7}
    })
}

/// `message` as a provider streams it: each block started empty, filled by one delta.
pub fn stream_of(message: &Value) -> String {
    let mut shell = message.clone();
    shell["content"] = json!([]);
    shell["stop_reason"] = Value::Null;
    let mut out = sse_event(
        "message_start",
        &json!({"type": "message_start", "message": shell}),
    );
    for (index, block) in message["content"].as_array().unwrap().iter().enumerate() {
        let (start, delta) = match block["type"].as_str().unwrap() {
            "text" => (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            ),
            _ => {
                let mut start = block.clone();
                start["input"] = json!({});
                let partial = block["input"].to_string();
                (
                    start,
                    json!({"type": "input_json_delta", "partial_json": partial}),
                )
            }
        };
        out += &sse_event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        );
        out += &sse_event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        );
        out += &sse_event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        );
    }
    out += &sse_event(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": null}, "usage": {"output_tokens": 7}}),
    );
    out += &sse_event("message_stop", &json!({"type": "message_stop"}));
    out
}

/// An upstream answering request `i` with `answers[i]`, streamed when the request asks.
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

/// What a client reads back: the whole message, from JSON or from its stream.
fn received(reply: &Reply) -> Value {
    if !reply.text().starts_with("event:") {
        return reply.json();
    }
    let mut message = Value::Null;
    let mut partial: Vec<String> = Vec::new();
    for (_, event) in sse_events(&reply.body) {
        match event["type"].as_str().unwrap() {
            "message_start" => message = event["message"].clone(),
            "content_block_start" => {
                let index = event["index"].as_u64().unwrap() as usize;
                let blocks = message["content"].as_array_mut().unwrap();
                assert_eq!(index, blocks.len(), "block indexes are contiguous");
                blocks.push(event["content_block"].clone());
                partial.push(String::new());
            }
            "content_block_delta" => {
                let index = event["index"].as_u64().unwrap() as usize;
                let delta = &event["delta"];
                if let Some(more) = delta["text"].as_str() {
                    let block = &mut message["content"][index];
                    block["text"] = json!(format!("{}{more}", block["text"].as_str().unwrap()));
                } else {
                    partial[index] += delta["partial_json"].as_str().unwrap();
                }
            }
            "content_block_stop" => {
                let index = event["index"].as_u64().unwrap() as usize;
                if !partial[index].is_empty() {
                    message["content"][index]["input"] =
                        serde_json::from_str(&partial[index]).unwrap();
                }
            }
            "message_delta" => message["stop_reason"] = event["delta"]["stop_reason"].clone(),
            _ => {}
        }
    }
    message
}

/// The names of the tools a request offers.
fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Every tool call a message list makes is answered in the very next message.
pub fn assert_calls_answered(messages: &[Value]) {
    for (at, message) in messages.iter().enumerate() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_use" {
                let next = &messages[at + 1]["content"];
                assert!(
                    next.as_array()
                        .unwrap()
                        .iter()
                        .any(|result| result["type"] == "tool_result"
                            && result["tool_use_id"] == block["id"]),
                    "call {} has no result in {next}",
                    block["id"]
                );
            }
        }
    }
}

/// A JSON value with every `cache_control` marker removed.
pub fn unmarked(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| *key != "cache_control")
                .map(|(key, inner)| (key.clone(), unmarked(inner)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(unmarked).collect()),
        other => other.clone(),
    }
}

pub fn live_memories(proxy: &Proxy) -> Vec<String> {
    let project = ProjectId::new(PROJECT).unwrap();
    proxy
        .store()
        .read(|tx| tx.memories(&project, &[MemoryStatus::Active, MemoryStatus::Permanent]))
        .unwrap()
        .into_iter()
        .map(|memory| memory.record.content)
        .collect()
}

/// Where the client's conversation starts upstream: after the engine's m[0] and m[1].
pub const HEAD: usize = 2;

pub const HEADERS: &[(&str, &str)] = &[("x-magic-context-project", PROJECT)];

/// The upstream writes a memory, searches it, then answers; the client gets the answer only.
async fn hidden_rounds(stream: bool) {
    let upstream = scripted(vec![
        message("msg_1", vec![tool_use("toolu_w", "ctx_memory", json!({"action": "write", "category": "PROJECT_RULES", "content": "Indent with tabs."}))], "tool_use"),
        message("msg_2", vec![tool_use("toolu_s", "ctx_search", json!({"query": "tabs"}))], "tool_use"),
        message("msg_3", vec![text("Tabs it is.")], "end_turn"),
        message("msg_4", vec![text("Noted.")], "end_turn"),
    ])
    .await;
    let proxy = proxy(&upstream, ToolsMode::Proxy).await;
    let first = [user("How do we indent?")];
    let reply = post(&proxy, "/v1/messages", HEADERS, &request(&first, stream)).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let answer = received(&reply);
    assert_eq!(answer["content"], json!([text("Tabs it is.")]));
    assert_eq!(answer["stop_reason"], "end_turn");
    // A JSON answer is the final call's; a stream went out live from the first round's
    // message_start on, and its end carries the final call's usage.
    let id = if stream { "msg_1" } else { "msg_3" };
    assert_eq!(answer["id"], id);

    let seen = upstream.seen();
    assert_eq!(seen.len(), 3);
    let requests: Vec<Value> = seen.iter().map(Seen::json).collect();
    for sent in &requests {
        assert_eq!(
            tool_names(sent),
            [
                "read_file",
                "ctx_reduce",
                "ctx_expand",
                "ctx_note",
                "ctx_memory",
                "ctx_search"
            ]
        );
        assert_eq!(
            sent["tools"], requests[0]["tools"],
            "one tool list for the session"
        );
        let system = sent["system"].as_array().unwrap();
        assert!(
            system.last().unwrap()["text"]
                .as_str()
                .unwrap()
                .starts_with("## Context tools")
        );
        assert_calls_answered(sent["messages"].as_array().unwrap());
    }
    let third = requests[2]["messages"].as_array().unwrap();
    assert_eq!(third.len(), HEAD + 5, "{third:?}");
    assert_eq!(third[HEAD + 1]["content"][0]["name"], "ctx_memory");
    assert_eq!(third[HEAD + 3]["content"][0]["name"], "ctx_search");
    let search_result = message_texts(&json!({"messages": [third[HEAD + 4].clone()]})).join("\n");
    assert!(
        search_result.contains("Indent with tabs."),
        "{search_result}"
    );
    assert_eq!(live_memories(&proxy), ["Indent with tabs."]);

    // The client's next request carries the answer it got; upstream, the hidden rounds are
    // back where they were, byte for byte.
    let second = [
        user("How do we indent?"),
        assistant("Tabs it is."),
        user("Thanks."),
    ];
    let reply = post(&proxy, "/v1/messages", HEADERS, &request(&second, stream)).await;
    assert_eq!(received(&reply)["content"], json!([text("Noted.")]));
    let seen = upstream.seen();
    assert_eq!(seen.len(), 4, "no hidden round this time");
    let later = seen[3].json();
    let later_messages = later["messages"].as_array().unwrap();
    assert_eq!(later_messages.len(), HEAD + 7);
    assert_calls_answered(later_messages);
    for (at, hidden) in third[HEAD + 1..HEAD + 4].iter().enumerate() {
        assert_eq!(&later_messages[HEAD + at + 1], hidden);
        let bytes = hidden.to_string();
        assert!(
            contains(&seen[2].body, &bytes) && contains(&seen[3].body, &bytes),
            "message {} is not repeated byte for byte",
            at + 1
        );
    }
    // The last hidden message carried the breakpoint then; its content is the same.
    assert_eq!(
        unmarked(&later_messages[HEAD + 4]),
        unmarked(&third[HEAD + 4])
    );
    proxy.shutdown().await;
}

pub fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

#[tokio::test]
async fn hidden_rounds_reach_the_client_as_one_answer() {
    hidden_rounds(false).await;
}

#[tokio::test]
async fn hidden_rounds_reach_a_streaming_client_as_one_stream() {
    hidden_rounds(true).await;
}

/// Our call beside the client's: the client sees its own call only, and on its next
/// request ours is back with its result, before the client's.
async fn mixed_answer(stream: bool) {
    let upstream = scripted(vec![
        message("msg_1", vec![
            text("Noting it, then reading."),
            tool_use("toolu_ours", "ctx_memory", json!({"action": "write", "category": "NAMING", "content": "Files are kebab-case."})),
            tool_use("toolu_client", "read_file", json!({"path": "a.rs"})),
        ], "tool_use"),
        message("msg_2", vec![text("Read it.")], "end_turn"),
    ])
    .await;
    let proxy = proxy(&upstream, ToolsMode::Proxy).await;
    let first = [user("Read a.rs.")];
    let reply = post(&proxy, "/v1/messages", HEADERS, &request(&first, stream)).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let got = received(&reply);
    let client_turn = json!([
        text("Noting it, then reading."),
        tool_use("toolu_client", "read_file", json!({"path": "a.rs"}))
    ]);
    assert_eq!(got["content"], client_turn);
    assert_eq!(got["stop_reason"], "tool_use");
    assert!(
        !reply.text().contains("ctx_memory"),
        "the client never sees our call"
    );
    assert_eq!(live_memories(&proxy), ["Files are kebab-case."]);

    let result = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_client", "content": "fn main() {}"}]});
    let next = [
        user("Read a.rs."),
        json!({"role": "assistant", "content": client_turn}),
        result.clone(),
    ];
    let reply = post(&proxy, "/v1/messages", HEADERS, &request(&next, stream)).await;
    assert_eq!(received(&reply)["content"], json!([text("Read it.")]));
    let again = [
        next[0].clone(),
        next[1].clone(),
        result,
        assistant("Read it."),
        user("Good."),
    ];
    post(&proxy, "/v1/messages", HEADERS, &request(&again, stream)).await;

    let seen = upstream.seen();
    assert_eq!(seen.len(), 3);
    let spliced = seen[1].json();
    let messages = spliced["messages"].as_array().unwrap();
    assert_calls_answered(messages);
    let ids: Vec<&Value> = messages[HEAD + 1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| &block["id"])
        .collect();
    assert_eq!(
        ids,
        [&Value::Null, &json!("toolu_ours"), &json!("toolu_client")]
    );
    let results: Vec<&Value> = messages[HEAD + 2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| &block["tool_use_id"])
        .collect();
    assert_eq!(results, [&json!("toolu_ours"), &json!("toolu_client")]);
    let later = seen[2].json();
    assert_eq!(later["messages"][HEAD + 1], messages[HEAD + 1]);
    assert!(contains(&seen[2].body, &messages[HEAD + 1].to_string()));
    assert_eq!(
        unmarked(&later["messages"][HEAD + 2]),
        unmarked(&messages[HEAD + 2])
    );
    proxy.shutdown().await;
}

#[tokio::test]
async fn a_mixed_answer_shows_the_client_only_its_own_call() {
    mixed_answer(false).await;
}

#[tokio::test]
async fn a_mixed_streamed_answer_shows_the_client_only_its_own_call() {
    mixed_answer(true).await;
}

#[tokio::test]
async fn a_failing_tool_answers_the_model_with_an_error_result() {
    let upstream = scripted(vec![
        message(
            "msg_1",
            vec![tool_use(
                "toolu_bad",
                "ctx_memory",
                json!({"action": "write"}),
            )],
            "tool_use",
        ),
        message("msg_2", vec![text("I could not save it.")], "end_turn"),
    ])
    .await;
    let proxy = proxy(&upstream, ToolsMode::Proxy).await;
    let reply = post(
        &proxy,
        "/v1/messages",
        HEADERS,
        &request(&[user("Save a memory.")], false),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.json()["content"],
        json!([text("I could not save it.")])
    );
    let sent = upstream.seen()[1].json();
    let result = &sent["messages"][HEAD + 2]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_bad");
    assert_eq!(result["is_error"], true);
    // Each upstream call has its ledger row, the hidden one included.
    let session = proxy.session_ids().remove(0);
    let calls = proxy.calls(&session, 2).await;
    assert!(calls.iter().all(|call| call.status == 200), "{calls:?}");
    assert_eq!(calls[0].stop_reason.as_deref(), Some("tool_use"));
    assert_eq!(calls[1].stop_reason.as_deref(), Some("end_turn"));
    proxy.shutdown().await;
}

#[tokio::test]
async fn hidden_rounds_stop_at_the_bound_with_tools_refused() {
    let upstream = scripted(vec![message(
        "msg_n",
        vec![tool_use(
            "toolu_again",
            "ctx_search",
            json!({"query": "again"}),
        )],
        "tool_use",
    )])
    .await;
    let proxy = proxy(&upstream, ToolsMode::Proxy).await;
    let reply = post(
        &proxy,
        "/v1/messages",
        HEADERS,
        &request(&[user("Search forever.")], false),
    )
    .await;
    let content = reply.json()["content"].clone();
    assert_eq!(
        content.as_array().map(Vec::len),
        Some(1),
        "our calls are never shown, the limit's line is: {content}"
    );
    assert_eq!(content[0]["type"], "text");
    assert!(
        content[0]["text"]
            .as_str()
            .is_some_and(|line| line.contains("after 8 rounds")),
        "{content}"
    );
    assert_eq!(
        reply.json()["stop_reason"],
        "end_turn",
        "no call is left to run"
    );
    let seen = upstream.seen();
    assert_eq!(seen.len(), 8);
    assert_eq!(seen[7].json()["tool_choice"], json!({"type": "none"}));
    assert!(
        seen[..7]
            .iter()
            .all(|sent| sent.json().get("tool_choice").is_none())
    );
    // The client carries on from the answer it read, the limit's line included: the same
    // session, with the hidden rounds spliced back where they ran.
    let said = json!({"role": "assistant", "content": content});
    let next = request(&[user("Search forever."), said, user("Go on.")], false);
    post(&proxy, "/v1/messages", HEADERS, &next).await;
    let sent = upstream.seen().last().unwrap().json();
    assert!(
        sent["messages"].to_string().contains("toolu_again"),
        "{sent}"
    );
    let sessions = proxy.session_ids();
    assert!(sessions.iter().all(|id| !id.contains('~')), "{sessions:?}");
    proxy.shutdown().await;
}

#[tokio::test]
async fn off_mode_claude_code_and_mcp_clients_get_none_of_our_tools() {
    let upstream = scripted(vec![message("msg_1", vec![text("Hi.")], "end_turn")]).await;
    let off = proxy(&upstream, ToolsMode::Off).await;
    let body = request(&[user("Hello.")], false);
    post(&off, "/v1/messages", HEADERS, &body).await;
    off.shutdown().await;
    let auto = proxy(&upstream, ToolsMode::Auto).await;
    let claude_code = [("x-claude-code-session-id", "5f0c"), HEADERS[0]];
    post(&auto, "/v1/messages", &claude_code, &body).await;
    post(&auto, "/v1/messages", HEADERS, &body).await;
    // A client whose tools show our MCP server already has them.
    let mut with_mcp = body.clone();
    with_mcp["tools"] = json!([read_file_tool(), {"name": "mcp__magic-context__ctx_search", "input_schema": {"type": "object"}}]);
    post(&auto, "/v1/messages", HEADERS, &with_mcp).await;
    let seen = upstream.seen();
    assert_eq!(
        tool_names(&seen[3].json()),
        ["read_file", "mcp__magic-context__ctx_search"]
    );
    for sent in &seen[..2] {
        let sent = sent.json();
        assert_eq!(tool_names(&sent), ["read_file"]);
        assert!(!sent["system"].to_string().contains("Context tools"));
    }
    assert_eq!(
        tool_names(&seen[2].json()).len(),
        6,
        "auto serves other clients"
    );
    auto.shutdown().await;
}
