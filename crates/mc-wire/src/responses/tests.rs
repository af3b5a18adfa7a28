//! Unit tests of the Responses codecs: round trips of the shapes Codex, OpenCode and Pi send,
//! error paths, stream accumulation and conversion to the neutral model.

use mc_core::{MediaKind, Message, Part, Role};
use serde_json::{Value, json};

use super::*;
use crate::WireError;

const LIMIT: usize = 1 << 20;

fn decode(value: &Value) -> ResponsesRequest {
    let bytes = serde_json::to_vec(value).unwrap();
    let request = ResponsesRequest::decode(&bytes, LIMIT).unwrap();
    assert_eq!(
        String::from_utf8(request.encode()).unwrap(),
        String::from_utf8(bytes).unwrap()
    );
    request
}

fn items(request: &ResponsesRequest) -> &[Item] {
    match &request.input {
        Some(Input::Items(items)) => items,
        other => panic!("expected items, got {other:?}"),
    }
}

/// A Codex turn after one shell call, in the shape the CLI sends (texts shortened).
fn codex_turn() -> Value {
    json!({
        "model": "gpt-5.5",
        "stream": true,
        "input": [
            {"type": "message", "id": "msg_a1", "role": "developer", "content": [{"type": "input_text", "text": "You are a coding agent."}]},
            {"type": "message", "id": "msg_a2", "role": "developer", "content": [
                {"type": "input_text", "text": "<skills_instructions>none</skills_instructions>"},
                {"type": "input_text", "text": "<permissions instructions>full</permissions instructions>"}]},
            {"type": "message", "id": "msg_a3", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>\n  <cwd>/tmp/w</cwd>\n</environment_context>"}]},
            {"type": "message", "id": "msg_a4", "role": "user", "content": [{"type": "input_text", "text": "Print hi, then stop."}]},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAB-opaque"},
            {"type": "function_call", "status": "completed", "id": "fc_1", "name": "exec_command", "arguments": "{\"cmd\": \"echo hi\"}", "call_id": "call_1"},
            {"type": "function_call_output", "id": "fco_1", "call_id": "call_1", "output": "Process exited with code 0\nOutput:\nhi\n"},
            {"type": "custom_tool_call", "id": "ctc_1", "status": "completed", "call_id": "call_2", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch"},
            {"type": "custom_tool_call_output", "call_id": "call_2", "output": "Done"},
            {"type": "message", "id": "msg_b1", "role": "assistant", "content": [{"type": "output_text", "text": "hi printed", "annotations": []}], "status": "completed"},
            {"type": "compaction", "id": "cmp_1", "encrypted_content": "c3VtbWFyeQ=="}
        ],
        "tools": [
            {"type": "function", "name": "exec_command", "description": "Runs a command.", "strict": false, "parameters": {"type": "object"}},
            {"type": "custom", "name": "apply_patch", "format": {"type": "grammar", "syntax": "lark", "definition": "start: x"}},
            {"type": "web_search"}
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": true,
        "reasoning": {"effort": "medium"},
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "0199-thread",
        "client_metadata": {"thread_id": "0199-thread"}
    })
}

#[test]
fn a_codex_turn_round_trips_and_types_its_items() {
    let request = decode(&codex_turn());
    let items = items(&request);
    assert_eq!(items.len(), 11);
    assert!(matches!(&items[0], Item::Message(m) if m.role == MessageRole::Developer));
    assert!(
        matches!(&items[4], Item::Reasoning(r) if r.encrypted_content.as_deref() == Some("gAAAAB-opaque"))
    );
    assert!(matches!(&items[5], Item::FunctionCall(c) if c.arguments == "{\"cmd\": \"echo hi\"}"));
    assert!(matches!(&items[6], Item::ToolOutput(o) if o.kind == OutputKind::Function));
    assert!(matches!(&items[7], Item::CustomToolCall(c) if c.name == "apply_patch"));
    assert!(matches!(&items[8], Item::ToolOutput(o) if o.kind == OutputKind::Custom));
    assert!(matches!(&items[10], Item::Other(raw) if raw["type"] == "compaction"));
    assert_eq!(request.prompt_cache_key(), Some("0199-thread"));
    assert_eq!(request.stateful_reason(), None);
    let tools = request.tools.as_ref().unwrap();
    assert!(tools[1].is_custom() && !tools[0].is_custom());
    assert_eq!(tools[2].name(), None);
}

#[test]
fn easy_messages_without_type_keep_their_form() {
    // OpenCode and Pi send the system prompt as `{"role", "content": "…"}`.
    let request = decode(&json!({
        "model": "m",
        "input": [
            {"role": "system", "content": "You are opencode."},
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}
        ],
        "store": false
    }));
    let Item::Message(system) = &items(&request)[0] else {
        panic!("a message")
    };
    assert_eq!(system.kind, None);
    assert_eq!(system.content, Content::Text("You are opencode.".into()));
}

#[test]
fn a_bare_string_input_stays_a_string() {
    let request = decode(&json!({"model": "m", "input": "hello", "stream": false}));
    assert_eq!(request.input, Some(Input::Text("hello".into())));
}

#[test]
fn stateful_requests_are_recognised() {
    let previous =
        decode(&json!({"model": "m", "previous_response_id": "resp_1", "input": "more"}));
    assert_eq!(previous.stateful_reason(), Some("previous_response_id"));
    let reference = decode(&json!({"model": "m", "store": true,
        "input": [{"type": "item_reference", "id": "msg_9"}]}));
    assert_eq!(reference.stateful_reason(), Some("item_reference"));
    let conversation = decode(&json!({"model": "m", "conversation": "conv_1", "input": "x"}));
    assert_eq!(conversation.stateful_reason(), Some("conversation"));
    let explicit_null = decode(&json!({"model": "m", "previous_response_id": null, "input": "x"}));
    assert_eq!(explicit_null.stateful_reason(), None);
}

#[test]
fn bad_shapes_name_their_path() {
    let cases = [
        (json!({"input": []}), "$", "missing required field `model`"),
        (
            json!({"model": "m", "input": 3}),
            "$.input",
            "expected a string or an array of items",
        ),
        (
            json!({"model": "m", "input": [{"content": "x"}]}),
            "$.input[0]",
            "missing required field `type`",
        ),
        (
            json!({"model": "m", "input": [{"role": "tool", "content": "x"}]}),
            "$.input[0].role",
            "unknown role `tool`",
        ),
        (
            json!({"model": "m", "input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}),
            "$.input[0]",
            "missing required field `call_id`",
        ),
        (
            json!({"model": "m", "input": [{"type": "message", "role": "user", "content": [{"text": "x"}]}]}),
            "$.input[0].content[0]",
            "missing required field `type`",
        ),
    ];
    for (value, want_path, want_reason) in cases {
        match ResponsesRequest::decode(&serde_json::to_vec(&value).unwrap(), LIMIT) {
            Err(WireError::Shape { path, reason }) => {
                assert_eq!(path, want_path, "{value}");
                assert!(reason.contains(want_reason), "{reason} for {value}");
            }
            other => panic!("expected a shape error for {value}, got {other:?}"),
        }
    }
}

#[test]
fn items_become_grouped_neutral_messages() {
    let request = decode(&codex_turn());
    let conversation = to_conversation(&items(&request)[2..]);
    let roles: Vec<Role> = conversation.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    // Reasoning stays a whole item; the call's arguments, spaced as the client wrote them,
    // stay their text (read as JSON they would go back compact).
    let thinking_and_call = &conversation[2].parts;
    assert!(
        matches!(&thinking_and_call[0], Part::Unknown { type_name, raw } if type_name == "reasoning" && raw["encrypted_content"] == "gAAAAB-opaque")
    );
    assert_eq!(
        thinking_and_call[1],
        Part::ToolCall {
            id: "call_1".into(),
            name: "exec_command".into(),
            input: json!("{\"cmd\": \"echo hi\"}")
        }
    );
    assert!(
        matches!(&conversation[3].parts[0], Part::ToolResult { call_id, .. } if call_id == "call_1")
    );
    // The assistant's answer and the compaction item share one assistant message.
    assert_eq!(conversation[6].parts[0], Part::text("hi printed"));
    assert!(
        matches!(&conversation[6].parts[1], Part::Unknown { type_name, .. } if type_name == "compaction")
    );
}

#[test]
fn rendering_keeps_opaque_items_and_tells_custom_calls_apart() {
    let request = decode(&codex_turn());
    let source = &items(&request)[2..];
    let conversation = to_conversation(source);
    let rendered = from_conversation(&conversation, |name| name == "apply_patch");
    let kinds: Vec<&str> = rendered.iter().map(Item::type_name).collect();
    assert_eq!(
        kinds,
        [
            "message",
            "message",
            "reasoning",
            "function_call",
            "function_call_output",
            "custom_tool_call",
            "custom_tool_call_output",
            "message",
            "compaction"
        ]
    );
    // Opaque items go out byte for byte.
    assert_eq!(
        serde_json::to_value(&rendered[2]).unwrap(),
        serde_json::to_value(&source[2]).unwrap()
    );
    assert_eq!(
        serde_json::to_value(&rendered[8]).unwrap(),
        json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "c3VtbWFyeQ=="})
    );
    assert_eq!(
        serde_json::to_value(&rendered[3]).unwrap(),
        json!({"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": "{\"cmd\": \"echo hi\"}"})
    );
    assert_eq!(
        serde_json::to_value(&rendered[7]).unwrap(),
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi printed"}]})
    );
    // Rendering is a pure function: the conversation it produces renders the same again.
    let again = from_conversation(&to_conversation(&rendered), |name| name == "apply_patch");
    assert_eq!(again, rendered);
}

#[test]
fn reasoning_whose_call_was_dropped_is_dropped_too() {
    let reasoning = |id: &str| Part::Unknown {
        type_name: "reasoning".into(),
        raw: json!({"type": "reasoning", "id": id, "summary": [], "encrypted_content": "e"}),
    };
    let call = Part::ToolCall {
        id: "c".into(),
        name: "f".into(),
        input: json!({}),
    };
    let messages = vec![
        Message::new(
            Role::Assistant,
            vec![reasoning("rs_kept"), call, reasoning("rs_trailing")],
        ),
        Message::new(Role::Assistant, vec![reasoning("rs_alone")]),
    ];
    let rendered: Vec<Value> = from_conversation(&messages, |_| false)
        .iter()
        .map(|item| serde_json::to_value(item).unwrap())
        .collect();
    let kinds: Vec<(&str, &str)> = rendered
        .iter()
        .map(|item| {
            (
                item["type"].as_str().unwrap(),
                item["id"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(kinds, [("reasoning", "rs_kept"), ("function_call", "")]);
}

#[test]
fn media_and_unknown_parts() {
    let request = decode(&json!({"model": "m", "input": [
        {"role": "user", "content": [
            {"type": "input_text", "text": "look"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"}]},
        {"role": "user", "content": [{"type": "input_video", "url": "v"}]}
    ]}));
    let conversation = to_conversation(items(&request));
    assert!(
        matches!(&conversation[0].parts[1], Part::Media { media: MediaKind::Image, source } if source["detail"] == "auto")
    );
    // A part type the model cannot hold keeps the whole message as one item.
    assert!(
        matches!(&conversation[1].parts[..], [Part::Unknown { type_name, .. }] if type_name == "message")
    );
    let rendered = from_conversation(&conversation, |_| false);
    assert_eq!(
        serde_json::to_value(&rendered[1]).unwrap(),
        json!({"role": "user", "content": [{"type": "input_video", "url": "v"}]})
    );
}

#[test]
fn engine_messages_render_as_items() {
    let messages = vec![
        Message::new(Role::User, vec![Part::text("§1§ history")]),
        Message::new(
            Role::Assistant,
            vec![
                Part::Thinking {
                    text: "hm".into(),
                    signature: None,
                },
                Part::text("ok"),
            ],
        ),
        Message::new(
            Role::Tool,
            vec![Part::ToolResult {
                call_id: "c".into(),
                content: vec![],
                is_error: false,
            }],
        ),
    ];
    let rendered: Vec<Value> = from_conversation(&messages, |_| false)
        .iter()
        .map(|item| serde_json::to_value(item).unwrap())
        .collect();
    assert_eq!(
        rendered,
        vec![
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "§1§ history"}]}),
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}),
            json!({"type": "function_call_output", "call_id": "c", "output": ""}),
        ]
    );
}

/// A streamed answer with a text item and a function call, as OpenAI sends it.
fn stream_events() -> Vec<Value> {
    let done_message = json!({"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": "Running it.", "annotations": []}]});
    let done_call = json!({"type": "function_call", "id": "fc_1", "status": "completed", "call_id": "call_9",
        "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}"});
    vec![
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "object": "response", "status": "in_progress", "model": "gpt-5", "output": [], "usage": null}}),
        json!({"type": "response.in_progress", "sequence_number": 1, "response": {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "sequence_number": 2, "output_index": 0, "item": {"type": "message", "id": "msg_1", "status": "in_progress", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "sequence_number": 3, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Running", "logprobs": []}),
        json!({"type": "response.output_text.delta", "sequence_number": 4, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": " it.", "logprobs": []}),
        json!({"type": "response.output_item.done", "sequence_number": 5, "output_index": 0, "item": done_message}),
        json!({"type": "response.output_item.added", "sequence_number": 6, "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "status": "in_progress", "call_id": "call_9", "name": "exec_command", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "sequence_number": 7, "item_id": "fc_1", "output_index": 1, "delta": "{\"cmd\":\"ls\"}"}),
        json!({"type": "response.output_item.done", "sequence_number": 8, "output_index": 1, "item": done_call}),
        json!({"type": "response.completed", "sequence_number": 9, "response": {"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5",
            "output": [done_message, done_call],
            "usage": {"input_tokens": 5000, "input_tokens_details": {"cached_tokens": 4096}, "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 5020}}}),
    ]
}

#[test]
fn stream_events_round_trip_and_accumulate() {
    let mut accumulator = EventAccumulator::new();
    for value in stream_events() {
        let bytes = serde_json::to_vec(&value).unwrap();
        let event = StreamEvent::decode(&bytes, LIMIT).unwrap();
        assert_eq!(event.encode(), bytes, "{value}");
        accumulator.push(&event);
    }
    assert!(accumulator.is_finished());
    let usage = accumulator.usage().unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.cached_tokens(),
            usage.output_tokens
        ),
        (Some(5000), Some(4096), Some(20))
    );
    let response = accumulator.finish().unwrap();
    assert_eq!(response.status.as_deref(), Some("completed"));
    assert_eq!(response.output_items().len(), 2);
    assert_eq!(response.model(), Some("gpt-5"));
}

#[test]
fn a_cut_stream_yields_the_items_closed_so_far() {
    let mut accumulator = EventAccumulator::new();
    for value in &stream_events()[..9] {
        accumulator.push(&StreamEvent::decode(&serde_json::to_vec(value).unwrap(), LIMIT).unwrap());
    }
    assert!(!accumulator.is_finished());
    assert!(accumulator.usage().is_none());
    let response = accumulator.finish().unwrap();
    assert_eq!(response.output_items().len(), 2);
    assert_eq!(response.status.as_deref(), Some("in_progress"));
}

#[test]
fn a_failed_response_names_its_error() {
    let value = json!({"type": "response.failed", "response": {"id": "r", "status": "failed", "output": [],
        "error": {"code": "context_length_exceeded", "message": "too long"}}});
    let event = StreamEvent::decode(&serde_json::to_vec(&value).unwrap(), LIMIT).unwrap();
    assert!(event.is_terminal());
    assert_eq!(
        event.response.unwrap().error_code(),
        Some("context_length_exceeded")
    );
}

#[test]
fn a_non_streaming_response_round_trips() {
    let value = json!({"id": "resp_2", "object": "response", "created_at": 1, "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"}, "model": "gpt-5",
        "output": [{"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "x"}],
        "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 3, "total_tokens": 13}});
    let bytes = serde_json::to_vec(&value).unwrap();
    let response = ResponsesResponse::decode(&bytes, LIMIT).unwrap();
    assert_eq!(response.encode(), bytes);
    assert_eq!(response.incomplete_reason(), Some("max_output_tokens"));
    assert_eq!(response.usage.unwrap().cached_tokens(), Some(0));
}

/// As on Chat: arguments nested past what a stored message can hold stay text, and every
/// depth goes back out as written.
#[test]
fn arguments_nested_too_deeply_to_store_stay_text_and_go_back_as_written() {
    for depth in [
        mc_core::MAX_INPUT_NESTING,
        mc_core::MAX_INPUT_NESTING + 1,
        127,
    ] {
        let arguments = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let call =
            json!({"type": "function_call", "call_id": "c", "name": "f", "arguments": arguments});
        let request = decode(&json!({"model": "m", "input": [call]}));
        let conversation = to_conversation(items(&request));
        let Part::ToolCall { input, .. } = &conversation[0].parts[0] else {
            panic!("{conversation:?}");
        };
        assert_eq!(
            input.is_string(),
            depth > mc_core::MAX_INPUT_NESTING,
            "{depth}"
        );
        let stored = serde_json::to_string(&conversation[0].parts).unwrap();
        assert_eq!(
            serde_json::from_str::<Vec<Part>>(&stored).unwrap(),
            conversation[0].parts
        );
        let rendered = from_conversation(&conversation, |_| false);
        assert_eq!(serde_json::to_value(&rendered[0]).unwrap(), call);
    }
}
