//! Unit tests of the OpenAI codecs: round trips of the shapes that are easy to lose, error
//! paths, stream accumulation and conversion to the neutral model.

use mc_core::{MediaKind, Message, Part, Role};
use serde_json::{Value, json};

use super::*;
use crate::WireError;

const LIMIT: usize = 1 << 20;

fn body(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap()
}

fn decode(value: &Value) -> ChatRequest {
    let bytes = body(value);
    let request = ChatRequest::decode(&bytes, LIMIT).unwrap();
    assert_eq!(
        String::from_utf8(request.encode()).unwrap(),
        String::from_utf8(bytes).unwrap()
    );
    request
}

fn shape_error(value: &Value) -> (String, String) {
    match ChatRequest::decode(&body(value), LIMIT) {
        Err(WireError::Shape { path, reason }) => (path, reason),
        other => panic!("expected a shape error, got {other:?}"),
    }
}

#[test]
fn null_content_beside_tool_calls_survives() {
    let request = decode(&json!({
        "model": "gpt-4o",
        "messages": [
            {"role": "user", "content": "list files"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\":\"ls\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"}
        ]
    }));
    let assistant = &request.messages[1];
    assert_eq!(assistant.content, None);
    assert_eq!(
        assistant.rest.get("content"),
        None,
        "the null is kept by the key order, not in rest"
    );
    assert!(
        String::from_utf8(request.encode())
            .unwrap()
            .contains(r#""content":null,"tool_calls""#)
    );
    // Setting the field later replaces the null in place instead of writing the key twice.
    let mut edited = request.clone();
    edited.messages[1].content = Some(ChatContent::Text("done".into()));
    let text = String::from_utf8(edited.encode()).unwrap();
    assert!(
        text.contains(r#"{"role":"assistant","content":"done","tool_calls""#),
        "{text}"
    );
    let calls = assistant.tool_calls.as_ref().unwrap();
    assert_eq!(calls[0].id, "call_1");
    assert_eq!(calls[0].function.name, "bash");
    assert_eq!(calls[0].rest.get("type"), Some(&json!("function")));
    assert_eq!(request.messages[2].tool_call_id.as_deref(), Some("call_1"));
}

#[test]
fn unknown_part_types_and_fields_survive_in_order() {
    let request = decode(&json!({
        "temperature": 0,
        "messages": [{"name": "ann", "role": "user", "content": [
            {"text": "look", "type": "text", "cache_control": {"type": "ephemeral"}},
            {"type": "input_text", "text": "from the responses API", "x": [1, 2]},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA==", "detail": "low"}}
        ]}],
        "model": "gpt-4o",
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}],
        "stream_options": {"include_usage": true},
        "stream": true
    }));
    let Some(ChatContent::Parts(parts)) = &request.messages[0].content else {
        panic!("parts expected")
    };
    let types: Vec<_> = parts.iter().map(ContentPart::type_name).collect();
    assert_eq!(types, ["text", "input_text", "image_url"]);
    assert!(matches!(parts[1], ContentPart::Unknown(_)));
    assert_eq!(
        parts[0].rest().get("cache_control"),
        Some(&json!({"type": "ephemeral"}))
    );
    assert_eq!(request.messages[0].name(), Some("ann"));
    assert_eq!(request.tools.as_ref().unwrap()[0].name(), Some("bash"));
    assert!(request.is_stream() && request.includes_stream_usage());
}

#[test]
fn wrong_types_name_their_path() {
    let message = |value: Value| json!({"model": "m", "messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}, value]});
    let cases = [
        (
            json!({"role": 7, "content": "x"}),
            "$.messages[2].role",
            "expected a role string, found a number",
        ),
        (
            json!({"role": "user", "content": 3}),
            "$.messages[2].content",
            "expected a string or an array of content parts, found a number",
        ),
        (
            json!({"role": "user", "content": [{"text": "x"}]}),
            "$.messages[2].content[0]",
            "missing required field `type`",
        ),
        (
            json!({"role": "user", "content": [{"type": "text", "text": 1}]}),
            "$.messages[2].content[0].text",
            "expected a string, found a number",
        ),
        (
            json!({"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {}}}]}),
            "$.messages[2].tool_calls[0].function.arguments",
            "expected a string, found an object",
        ),
        (
            json!({"content": "x"}),
            "$.messages[2]",
            "missing required field `role`",
        ),
        (
            json!("hello"),
            "$.messages[2]",
            "expected an object, found a string",
        ),
    ];
    for (value, path, reason) in cases {
        assert_eq!(
            shape_error(&message(value)),
            (path.to_owned(), reason.to_owned())
        );
    }
    assert_eq!(
        shape_error(&json!({"model": "m", "messages": [], "stream": "yes"})),
        (
            "$.stream".to_owned(),
            "expected true or false, found a string".to_owned()
        )
    );
}

#[test]
fn unknown_role_lists_the_allowed_ones() {
    let error = ChatRequest::decode(
        br#"{"model":"m","messages":[{"role":"critic","content":"no"}]}"#,
        LIMIT,
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid value at `$.messages[0].role`: unknown role `critic`: expected `system`, `developer`, `user`, \
         `assistant`, `tool` or `function`"
    );
}

#[test]
fn size_and_syntax_errors_come_before_shape() {
    assert_eq!(
        ChatRequest::decode(b"{}", 1),
        Err(WireError::TooLarge { size: 2, limit: 1 })
    );
    assert!(matches!(
        ChatRequest::decode(br#"{"model":"#, LIMIT),
        Err(WireError::Syntax { line: 1, .. })
    ));
}

#[test]
fn stream_usage_flag_is_set_in_place() {
    let mut request =
        decode(&json!({"model": "m", "stream_options": {"x": 1}, "messages": [], "stream": true}));
    request.set_stream_usage(true);
    assert_eq!(
        String::from_utf8(request.encode()).unwrap(),
        r#"{"model":"m","stream_options":{"x":1,"include_usage":true},"messages":[],"stream":true}"#
    );
    let mut bare = decode(&json!({"model": "m", "messages": []}));
    bare.set_stream_usage(true);
    assert!(bare.includes_stream_usage());
    assert_eq!(
        String::from_utf8(bare.encode()).unwrap(),
        r#"{"model":"m","messages":[],"stream_options":{"include_usage":true}}"#
    );
}

#[test]
fn response_usage_reads_cached_tokens() {
    let value = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi", "refusal": null},
                     "logprobs": null, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
                  "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
                  "completion_tokens_details": {"reasoning_tokens": 64}},
        "system_fingerprint": "fp_1"
    });
    let bytes = body(&value);
    let response = ChatResponse::decode(&bytes, LIMIT).unwrap();
    assert_eq!(response.encode(), bytes);
    let usage = response.usage.as_ref().unwrap();
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.cached_tokens(),
            usage.reasoning_tokens()
        ),
        (Some(2006), Some(1920), Some(64))
    );
    assert_eq!(
        (response.model(), response.finish_reason()),
        (Some("gpt-4o"), Some("stop"))
    );
    assert_eq!(
        response.message().unwrap().content,
        Some(ChatContent::Text("hi".to_owned()))
    );
}

fn chunk(value: Value) -> ChatChunk {
    let bytes = body(&value);
    let chunk = ChatChunk::decode(&bytes, LIMIT).unwrap();
    assert_eq!(chunk.encode(), bytes);
    chunk
}

#[test]
fn streamed_chunks_accumulate_to_the_final_message() {
    let head = |choices: Value, usage: Value| {
        json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 7, "model": "gpt-4o",
               "choices": choices, "usage": usage})
    };
    let delta = |delta: Value, finish: Value| json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]);
    let call = |index: u64, head: Option<(&str, &str)>, arguments: &str| match head {
        Some((id, name)) => {
            json!({"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
        }
        None => json!({"index": index, "function": {"arguments": arguments}}),
    };
    let stream = [
        head(
            delta(
                json!({"role": "assistant", "content": null, "refusal": null}),
                Value::Null,
            ),
            Value::Null,
        ),
        head(
            delta(json!({"content": "Running "}), Value::Null),
            Value::Null,
        ),
        head(delta(json!({"content": "both."}), Value::Null), Value::Null),
        head(
            delta(
                json!({"tool_calls": [call(0, Some(("call_a", "bash")), "")]}),
                Value::Null,
            ),
            Value::Null,
        ),
        head(
            delta(
                json!({"tool_calls": [call(0, None, "{\"cmd\":")]}),
                Value::Null,
            ),
            Value::Null,
        ),
        head(
            delta(
                json!({"tool_calls": [call(1, Some(("call_b", "read")), "{\"path\"")]}),
                Value::Null,
            ),
            Value::Null,
        ),
        head(
            delta(
                json!({"tool_calls": [call(0, None, "\"ls\"}")]}),
                Value::Null,
            ),
            Value::Null,
        ),
        head(
            delta(
                json!({"tool_calls": [call(1, None, ":\"a.rs\"}")]}),
                Value::Null,
            ),
            Value::Null,
        ),
        head(delta(json!({}), json!("tool_calls")), Value::Null),
        head(
            json!([]),
            json!({"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940,
                                "prompt_tokens_details": {"cached_tokens": 768}}),
        ),
    ];
    let mut accumulator = ChunkAccumulator::new();
    for value in stream {
        accumulator.push(&chunk(value));
    }
    assert_eq!(accumulator.chunks(), 10);
    let response = accumulator.finish();
    assert_eq!(
        String::from_utf8(response.encode()).unwrap(),
        concat!(
            r#"{"id":"chatcmpl-9","choices":[{"index":0,"message":{"role":"assistant","content":"Running both.","#,
            r#""tool_calls":[{"id":"call_a","function":{"name":"bash","arguments":"{\"cmd\":\"ls\"}"},"type":"function"},"#,
            r#"{"id":"call_b","function":{"name":"read","arguments":"{\"path\":\"a.rs\"}"},"type":"function"}]},"#,
            r#""finish_reason":"tool_calls"}],"usage":{"prompt_tokens":900,"completion_tokens":40,"total_tokens":940,"#,
            r#""prompt_tokens_details":{"cached_tokens":768}},"object":"chat.completion","created":7,"model":"gpt-4o"}"#,
        )
    );
    assert_eq!(
        response.usage.as_ref().and_then(ChatUsage::cached_tokens),
        Some(768)
    );
}

#[test]
fn tool_call_pieces_without_index_follow_their_id() {
    let piece = |id: Option<&str>, arguments: &str| {
        let mut call = json!({"function": {"arguments": arguments}});
        if let Some(id) = id {
            call["id"] = json!(id);
            call["function"]["name"] = json!("f");
        }
        json!({"choices": [{"delta": {"reasoning_content": "r", "tool_calls": [call]}}]})
    };
    let mut accumulator = ChunkAccumulator::new();
    for value in [
        piece(Some("a"), "{"),
        piece(None, "}"),
        piece(Some("b"), "[1]"),
    ] {
        accumulator.push(&chunk(value));
    }
    let response = accumulator.finish();
    let message = response.message().unwrap();
    let calls: Vec<_> = message
        .tool_calls
        .iter()
        .flatten()
        .map(|call| (call.id.as_str(), call.function.arguments.as_str()))
        .collect();
    assert_eq!(calls, [("a", "{}"), ("b", "[1]")]);
    assert_eq!(message.reasoning(), Some(("reasoning_content", "rrr")));
    assert_eq!(response.finish_reason(), None);
}

#[test]
fn conversation_maps_every_role_and_part() {
    let request = decode(&json!({"model": "m", "messages": [
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
            {"type": "input_audio", "input_audio": {"data": "AA==", "format": "wav"}},
            {"type": "file", "file": {"file_id": "file-1"}},
            {"type": "future", "z": 1}
        ]},
        {"role": "assistant", "reasoning": "think", "content": "ok", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\":\"ls\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": "{not json"}}
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "a.txt"}]},
        {"role": "assistant", "content": null, "function_call": {"name": "old", "arguments": "{}"}},
        {"role": "function", "name": "old", "content": "done"}
    ]}));
    let expected = vec![
        Message::new(Role::System, vec![Part::text("be brief")]),
        Message::new(
            Role::User,
            vec![
                Part::text("what is this?"),
                Part::Media {
                    media: MediaKind::Image,
                    source: json!({"url": "https://x/y.png"}),
                },
                Part::Media {
                    media: MediaKind::Audio,
                    source: json!({"data": "AA==", "format": "wav"}),
                },
                Part::Media {
                    media: MediaKind::Document,
                    source: json!({"file_id": "file-1"}),
                },
                Part::Unknown {
                    type_name: "future".to_owned(),
                    raw: json!({"type": "future", "z": 1}),
                },
            ],
        ),
        Message::new(
            Role::Assistant,
            vec![
                Part::Thinking {
                    text: "think".to_owned(),
                    signature: None,
                },
                Part::text("ok"),
                Part::ToolCall {
                    id: "c1".to_owned(),
                    name: "bash".to_owned(),
                    input: json!({"cmd": "ls"}),
                },
                Part::ToolCall {
                    id: "c2".to_owned(),
                    name: "bash".to_owned(),
                    input: json!("{not json"),
                },
            ],
        ),
        Message::new(
            Role::Tool,
            vec![Part::ToolResult {
                call_id: "c1".to_owned(),
                content: vec![Part::text("a.txt")],
                is_error: false,
            }],
        ),
        Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: "old".to_owned(),
                name: "old".to_owned(),
                input: json!({}),
            }],
        ),
        Message::new(
            Role::Tool,
            vec![Part::ToolResult {
                call_id: "old".to_owned(),
                content: vec![Part::text("done")],
                is_error: false,
            }],
        ),
    ];
    assert_eq!(to_conversation(&request).unwrap(), expected);
}

#[test]
fn tool_message_without_call_id_is_an_error_at_its_path() {
    let request = decode(
        &json!({"model": "m", "messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": "y"}]}),
    );
    let Err(WireError::Shape { path, .. }) = to_conversation(&request) else {
        panic!("expected a shape error")
    };
    assert_eq!(path, "$.messages[1]");
}

#[test]
fn domain_messages_survive_wire_and_back() {
    let conversation = vec![
        Message::new(Role::System, vec![Part::text("rules")]),
        Message::new(
            Role::User,
            vec![
                Part::text("a"),
                Part::Media {
                    media: MediaKind::Image,
                    source: json!({"url": "u"}),
                },
            ],
        ),
        Message::new(
            Role::Assistant,
            vec![
                Part::Thinking {
                    text: "hmm".to_owned(),
                    signature: None,
                },
                Part::text("calling"),
                Part::ToolCall {
                    id: "c1".to_owned(),
                    name: "bash".to_owned(),
                    input: json!({"cmd": "ls", "n": [1, 2]}),
                },
                Part::ToolCall {
                    id: "c2".to_owned(),
                    name: "edit".to_owned(),
                    input: json!("{broken"),
                },
            ],
        ),
        Message::new(
            Role::Tool,
            vec![Part::ToolResult {
                call_id: "c1".to_owned(),
                content: vec![Part::text("ok")],
                is_error: false,
            }],
        ),
        Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: "c3".to_owned(),
                name: "x".to_owned(),
                input: json!({}),
            }],
        ),
    ];
    let wire: Vec<ChatMessage> = conversation.iter().flat_map(from_message).collect();
    assert_eq!(wire.len(), conversation.len());
    let request = ChatRequest::new("m", wire);
    let decoded = ChatRequest::decode(&request.encode(), LIMIT).unwrap();
    assert_eq!(decoded.encode(), request.encode());
    assert_eq!(to_conversation(&decoded).unwrap(), conversation);
}

#[test]
fn anthropic_style_user_turn_splits_into_tool_messages_then_user() {
    let turn = Message::new(
        Role::User,
        vec![
            Part::ToolResult {
                call_id: "a".to_owned(),
                content: vec![Part::text("1")],
                is_error: false,
            },
            Part::text("and now?"),
            Part::ToolResult {
                call_id: "b".to_owned(),
                content: Vec::new(),
                is_error: true,
            },
        ],
    );
    let rendered: Vec<String> = from_message(&turn)
        .iter()
        .map(|message| serde_json::to_string(message).unwrap())
        .collect();
    assert_eq!(
        rendered,
        [
            r#"{"role":"tool","content":"1","tool_call_id":"a"}"#,
            r#"{"role":"tool","content":"","tool_call_id":"b"}"#,
            r#"{"role":"user","content":"and now?"}"#,
        ]
    );
}

/// Arguments are JSON inside a string, parsed on their own: JSON nested past what a stored
/// message can hold stays the text it is, and every depth goes back out as written.
#[test]
fn arguments_nested_too_deeply_to_store_stay_text_and_go_back_as_written() {
    for depth in [
        mc_core::MAX_INPUT_NESTING,
        mc_core::MAX_INPUT_NESTING + 1,
        127,
    ] {
        let arguments = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let request = decode(
            &json!({"model": "m", "messages": [{"role": "assistant", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}]}]}),
        );
        let message = to_message(&request.messages[0]).unwrap();
        let Part::ToolCall { input, .. } = &message.parts[0] else {
            panic!("{message:?}");
        };
        assert_eq!(
            input.is_string(),
            depth > mc_core::MAX_INPUT_NESTING,
            "{depth}"
        );
        let stored = serde_json::to_string(&message.parts).unwrap();
        assert_eq!(
            serde_json::from_str::<Vec<Part>>(&stored).unwrap(),
            message.parts
        );
        let back = from_message(&message);
        assert_eq!(
            back[0].tool_calls.as_ref().unwrap()[0].function.arguments,
            arguments
        );
    }
}

/// A message of calls only goes up as `"content": null` in its place, whether it came with
/// `null`, with no key or with `""` read away, and a decoded `null` stays where it came.
#[test]
fn a_calls_only_message_renders_null_content_in_place() {
    let call = Part::ToolCall {
        id: "call_1".into(),
        name: "bash".into(),
        input: json!({"cmd": "ls"}),
    };
    let rendered = from_message(&Message::new(Role::Assistant, vec![call]));
    let text = String::from_utf8(serde_json::to_vec(&rendered).unwrap()).unwrap();
    assert!(
        text.starts_with(r#"[{"role":"assistant","content":null,"tool_calls":[{"id":"call_1""#),
        "{text}"
    );
    let text_only = from_message(&Message::new(Role::Assistant, vec![Part::text("hi")]));
    assert_eq!(
        serde_json::to_value(&text_only).unwrap(),
        json!([{"role": "assistant", "content": "hi"}])
    );
    let mut decoded = decode(&json!({"model": "m", "messages": [
        {"tool_calls": [], "role": "assistant", "content": null, "name": "x"}
    ]}));
    decoded.messages[0].set_null_content();
    assert_eq!(
        String::from_utf8(decoded.encode()).unwrap(),
        r#"{"model":"m","messages":[{"tool_calls":[],"role":"assistant","content":null,"name":"x"}]}"#
    );
}
