//! A conversation the engine has no reason to change reaches the provider as the client
//! sent it: every message and item, with every field the client wrote (`name`, `refusal`,
//! `annotations`, `reasoning_content`, `id`, `status`, fields no codec knows), in its key
//! order, numbers and argument text as written, on every wire. Property tests over generated
//! conversations, each sent through a running proxy to an in-process upstream; what the
//! engine adds before the conversation (its head) and its cache markers aside, the bytes of
//! each client message must come out the same.

use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestCaseError, TestRunner};
use serde_json::{Map, Value, json};

use crate::agent_tools::unmarked;
use crate::support::*;

/// Values clients put in fields of their own: numbers of every spelling included.
fn arb_json() -> impl Strategy<Value = Value> {
    let number = prop::sample::select(vec![
        "0",
        "-7",
        "1.0",
        "2.5e-3",
        "18446744073709551617",
        "0.10000000000000000555",
    ])
    .prop_map(|text| serde_json::from_str::<Value>(text).unwrap_or(Value::Null));
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number,
        "[a-zA-Z é\\n\"\\\\]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::vec(("[a-z_]{1,6}", inner), 0..3)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// Fields of the client's own, under names no codec types.
fn arb_extra() -> impl Strategy<Value = Vec<(String, Value)>> {
    prop::collection::vec(("x_[a-z]{1,4}", arb_json()), 0..3)
}

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 .,é]{1,30}"
}

/// Argument text as clients write it: compact, spaced, or not JSON at all.
fn arguments() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        r#"{"path":"a.rs"}"#,
        r#"{"path": "b.rs", "offset": 18446744073709551617}"#,
        r#"{"path":"caf\u00e9.rs","path":"c.rs"}"#,
        "not json",
        "",
    ])
    .prop_map(str::to_owned)
}

/// `fields` in order, then `extra` (a key already set keeps its place and takes the value).
fn object(fields: Vec<(&str, Value)>, extra: Vec<(String, Value)>) -> Value {
    let mut map: Map<String, Value> = fields
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect();
    map.extend(extra);
    Value::Object(map)
}

/// An assistant Chat message: its content in any form clients send (null, absent, text,
/// parts with a refusal), the fields models and SDKs add, maybe a call.
fn chat_assistant(call: usize) -> impl Strategy<Value = Vec<Value>> {
    let content = prop_oneof![
        Just(Some(Value::Null)),
        Just(None),
        text().prop_map(|text| Some(Value::String(text))),
        (text(), text()).prop_map(|(said, refused)| Some(json!([
            {"type": "text", "text": said, "annotations": []},
            {"type": "refusal", "refusal": refused}
        ]))),
    ];
    let decorations = prop::sample::subsequence(
        vec![
            ("refusal", Value::Null),
            ("annotations", json!([])),
            ("reasoning_content", json!("Thinking it over.")),
            ("name", json!("helper")),
        ],
        0..=4,
    );
    (
        content,
        decorations,
        proptest::option::of(arguments()),
        arb_extra(),
    )
        .prop_map(move |(content, decorations, arguments, extra)| {
            let mut fields = vec![("role", json!("assistant"))];
            if let Some(content) = content {
                fields.push(("content", content));
            }
            fields.extend(decorations);
            let id = format!("call_{call}");
            if let Some(arguments) = &arguments {
                fields.push((
                    "tool_calls",
                    json!([{"id": id, "type": "function",
                        "function": {"name": "read_file", "arguments": arguments}}]),
                ));
            }
            let mut turn = vec![object(fields, extra)];
            if arguments.is_some() {
                turn.push(json!({"role": "tool", "tool_call_id": id, "content": "fn main() {}"}));
            }
            turn
        })
}

fn chat_user() -> impl Strategy<Value = Value> {
    let content = prop_oneof![
        text().prop_map(Value::String),
        (text(), arb_extra()).prop_map(|(said, extra)| json!([object(
            vec![("type", json!("text")), ("text", json!(said))],
            extra
        )])),
    ];
    (content, any::<bool>(), arb_extra()).prop_map(|(content, named, extra)| {
        let mut fields = vec![("role", json!("user")), ("content", content)];
        if named {
            fields.push(("name", json!("alice")));
        }
        object(fields, extra)
    })
}

fn chat_conversation() -> impl Strategy<Value = Vec<Value>> {
    let turn = |call: usize| (chat_user(), chat_assistant(call));
    (
        prop::collection::vec(turn(0), 0..2),
        prop::collection::vec(turn(1), 0..2),
        chat_user(),
    )
        .prop_map(|(first, second, last)| {
            let mut messages = Vec::new();
            for (user, assistant) in first.into_iter().chain(second) {
                messages.push(user);
                messages.extend(assistant);
            }
            messages.push(last);
            messages
        })
}

/// An Anthropic conversation: user text as a string or blocks, text blocks with fields of
/// their own (web search's `citations`, a harness's), thinking with its signature, calls
/// whose inputs carry numbers of every spelling, results as text or blocks, unknown blocks
/// (a server tool's) kept whole.
fn anthropic_conversation() -> impl Strategy<Value = Vec<Value>> {
    let user = || {
        (text(), any::<bool>(), arb_extra()).prop_map(|(said, bare, extra)| {
            let content = if bare {
                json!(said)
            } else {
                json!([object(
                    vec![("type", json!("text")), ("text", json!(said))],
                    extra
                )])
            };
            json!({"role": "user", "content": content})
        })
    };
    let assistant = (text(), arb_json(), any::<bool>(), arb_extra()).prop_map(
        |(said, input_value, thinks, extra)| {
            let mut blocks = Vec::new();
            if thinks {
                blocks.push(json!({"type": "thinking", "thinking": "Let me see.", "signature": "c2lnbmF0dXJl"}));
            }
            blocks.push(json!({"type": "text", "text": said, "citations": [
                {"type": "web_search_result_location", "url": "https://example.com/a",
                 "title": "A", "encrypted_index": "Eo8BCi", "cited_text": "quoted"}]}));
            blocks.push(object(
                vec![
                    ("type", json!("server_tool_use")),
                    ("id", json!("srvtoolu_1")),
                    ("name", json!("web_search")),
                ],
                extra,
            ));
            blocks.push(json!({"type": "tool_use", "id": "toolu_1", "name": "read_file",
                "input": {"path": "a.rs", "value": input_value}}));
            json!({"role": "assistant", "content": blocks})
        },
    );
    let result = prop_oneof![
        Just(json!("fn main() {}")),
        Just(json!([{"type": "text", "text": "fn main() {}"}])),
    ]
    .prop_map(|content| {
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": content}]})
    });
    (user(), proptest::option::of((assistant, result)), user()).prop_map(
        |(first, exchange, last)| {
            let mut messages = vec![first];
            if let Some((assistant, result)) = exchange {
                messages.push(assistant);
                messages.push(result);
            }
            messages.push(last);
            messages
        },
    )
}

/// Responses items as Codex sends them: ids and statuses, annotations, reasoning with its
/// encrypted content, calls and outputs, fields of the client's own.
fn responses_conversation() -> impl Strategy<Value = Vec<Value>> {
    let user = || {
        (text(), arb_extra()).prop_map(|(said, extra)| {
            object(
                vec![
                    ("type", json!("message")),
                    ("role", json!("user")),
                    ("content", json!([{"type": "input_text", "text": said}])),
                ],
                extra,
            )
        })
    };
    let said = (text(), arb_extra()).prop_map(|(said, extra)| {
        object(
            vec![
                ("type", json!("message")),
                ("id", json!("msg_1")),
                ("status", json!("completed")),
                ("role", json!("assistant")),
                (
                    "content",
                    json!([{"type": "output_text", "text": said, "annotations": []}]),
                ),
            ],
            extra,
        )
    });
    let exchange = (arguments(), arb_extra()).prop_map(|(arguments, extra)| {
        vec![
            json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAB"}),
            object(
                vec![
                    ("type", json!("function_call")),
                    ("id", json!("fc_1")),
                    ("status", json!("completed")),
                    ("call_id", json!("call_1")),
                    ("name", json!("read_file")),
                    ("arguments", json!(arguments)),
                ],
                extra,
            ),
            json!({"type": "function_call_output", "id": "fco_1", "call_id": "call_1",
                "output": "fn main() {}", "status": "completed"}),
        ]
    });
    (user(), proptest::option::of((said, exchange)), user()).prop_map(|(first, middle, last)| {
        let mut items = vec![first];
        if let Some((said, exchange)) = middle {
            items.push(said);
            items.extend(exchange);
        }
        items.push(last);
        items
    })
}

/// Makes each generated conversation its own: the first message's text gets a serial.
static SERIAL: AtomicUsize = AtomicUsize::new(0);

fn serial() -> usize {
    SERIAL.fetch_add(1, Ordering::Relaxed)
}

/// `value` without the engine's designed changes: cache markers, and the `§N§ ` tag the
/// engine puts before a message's text so the agent can name it to `ctx_reduce`.
fn as_the_client_wrote(value: &Value) -> Value {
    match unmarked(value) {
        Value::String(text) => Value::String(untagged(&text).to_owned()),
        Value::Array(items) => Value::Array(items.iter().map(as_the_client_wrote).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, inner)| (key.clone(), as_the_client_wrote(inner)))
                .collect(),
        ),
        other => other,
    }
}

fn untagged(text: &str) -> &str {
    let Some(rest) = text.strip_prefix('§') else {
        return text;
    };
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    match rest[digits..].strip_prefix("§ ") {
        Some(after) if digits > 0 => after,
        _ => text,
    }
}

/// Sends `body` to `path` and checks that the upstream's `key` array starts with the
/// client's first `lead` entries (what stays before the engine's head: a Chat system
/// message) and ends with the rest, each byte for byte once the engine's designed changes
/// are set aside.
async fn assert_as_sent(
    proxy: &Proxy,
    upstream: &Upstream,
    path: &str,
    body: Value,
    (key, lead): (&str, usize),
) -> Result<(), TestCaseError> {
    let sent = body[key].as_array().cloned().unwrap_or_default();
    let reply = post(proxy, path, &[], &body).await;
    prop_assert_eq!(reply.status, 200, "{}", reply.text());
    let seen = upstream.seen();
    let upstream_body = seen.last().map(Seen::json).unwrap_or(Value::Null);
    let went = upstream_body[key].as_array().cloned().unwrap_or_default();
    prop_assert!(went.len() >= sent.len(), "{upstream_body}");
    let tail = sent.len() - lead;
    let pairs = sent[..lead]
        .iter()
        .zip(&went[..lead])
        .chain(sent[lead..].iter().zip(&went[went.len() - tail..]));
    for (theirs, ours) in pairs {
        prop_assert_eq!(
            unmarked(theirs).to_string(),
            as_the_client_wrote(ours).to_string(),
            "a message changed on its way up"
        );
    }
    Ok(())
}

fn runner() -> TestRunner {
    TestRunner::new(RunnerConfig {
        cases: 64,
        failure_persistence: None,
        ..RunnerConfig::default()
    })
}

#[test]
fn chat_conversations_go_up_as_sent() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let upstream = runtime.block_on(Upstream::replying(|_, _| {
        json_response(
            200,
            &crate::agent_tools_chat::answer(Some("ok"), Vec::new()),
        )
    }));
    let proxy = runtime.block_on(Proxy::start(&upstream.url()));
    let result = runner().run(&chat_conversation(), |mut messages| {
        if let Some(first) = messages.first_mut() {
            first["x_serial"] = json!(serial());
        }
        let mut all = vec![json!({"role": "system", "content": "You are a careful coding agent."})];
        all.extend(messages);
        let body = json!({"model": "gpt-4o", "messages": all});
        runtime.block_on(assert_as_sent(
            &proxy,
            &upstream,
            "/v1/chat/completions",
            body,
            ("messages", 1),
        ))
    });
    runtime.block_on(proxy.shutdown());
    result.unwrap();
}

#[test]
fn anthropic_conversations_go_up_as_sent() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let upstream = runtime.block_on(Upstream::replying(|_, _| {
        json_response(200, &anthropic_message("ok"))
    }));
    let proxy = runtime.block_on(Proxy::start(&upstream.url()));
    let result = runner().run(&anthropic_conversation(), |mut messages| {
        if let Some(first) = messages.first_mut() {
            first["content"] = json!(format!("Case {}.", serial()));
        }
        // Anthropic defines a string content as shorthand for one text block and an absent
        // `is_error` as false; the engine writes the long forms (the provider reads both
        // alike, and the same request always gets the same bytes).
        for message in &mut messages {
            long_forms(message);
        }
        let mut body = anthropic_request(&messages);
        body["tools"] = json!([{"name": "read_file", "description": "Reads a file.",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]);
        runtime.block_on(assert_as_sent(
            &proxy,
            &upstream,
            "/v1/messages",
            body,
            ("messages", 0),
        ))
    });
    runtime.block_on(proxy.shutdown());
    result.unwrap();
}

/// An Anthropic message with its shorthands written out: string contents (of the message
/// and of tool results) as one text block, `is_error: false` left out.
fn long_forms(message: &mut Value) {
    if let Some(text) = message["content"].as_str().map(str::to_owned) {
        message["content"] = json!([{"type": "text", "text": text}]);
    }
    for block in message["content"].as_array_mut().into_iter().flatten() {
        if block["type"] == "tool_result" {
            if let Some(text) = block["content"].as_str().map(str::to_owned) {
                block["content"] = json!([{"type": "text", "text": text}]);
            }
            if block["is_error"] == json!(false) {
                block
                    .as_object_mut()
                    .map(|fields| fields.shift_remove("is_error"));
            }
        }
    }
}

#[test]
fn responses_conversations_go_up_as_sent() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let upstream = runtime.block_on(Upstream::replying(|_, _| {
        json_response(
            200,
            &crate::agent_tools_responses::answer(vec![crate::agent_tools_responses::said("ok")]),
        )
    }));
    let proxy = runtime.block_on(Proxy::start(&upstream.url()));
    let result = runner().run(&responses_conversation(), |mut items| {
        if let Some(first) = items.first_mut() {
            first["x_serial"] = json!(serial());
        }
        let body = json!({"model": "gpt-5", "instructions": "You are a careful coding agent.",
            "input": items, "tools": []});
        runtime.block_on(assert_as_sent(
            &proxy,
            &upstream,
            "/v1/responses",
            body,
            ("input", 0),
        ))
    });
    runtime.block_on(proxy.shutdown());
    result.unwrap();
}
