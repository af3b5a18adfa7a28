//! Recognition of side calls on prompts shaped as each host sends them.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue};
use mc_wire::anthropic::{MessagesRequest, to_conversation};
use mc_wire::openai::ChatRequest;
use serde_json::{Value, json};

use super::*;
use crate::render_openai;

const TITLE_SYSTEM: &str = "You are a title generator. You output ONLY a thread title. Nothing else.\n\n<task>\nGenerate a brief title that would help the user find this conversation later.\n</task>";
const OPENCODE_SUMMARY_SYSTEM: &str = "You are a context summarization agent. Summarize the conversation so another agent can continue it.";
const PI_SUMMARY_SYSTEM: &str = "You are a context summarization assistant. Your task is to read a conversation between a user and an AI coding assistant, then produce a structured summary following the exact format specified.";

fn anthropic(body: &Value, headers: &HeaderMap) -> Option<SideCall> {
    let request = MessagesRequest::decode(body.to_string().as_bytes(), usize::MAX).unwrap();
    let conversation = to_conversation(&request);
    recognise(
        headers,
        &ClientRequest::Anthropic(Arc::new(request)),
        &conversation,
    )
}

fn chat(body: &Value) -> Option<SideCall> {
    let request = ChatRequest::decode(body.to_string().as_bytes(), usize::MAX).unwrap();
    let conversation = render_openai::conversation(&request).unwrap();
    recognise(
        &HeaderMap::new(),
        &ClientRequest::OpenAi(request),
        &conversation,
    )
}

/// OpenCode's title call on the Anthropic wire: two parts merged into one user message.
fn opencode_title() -> Value {
    json!({
        "model": "fake-model", "max_tokens": 8192, "stream": true,
        "system": [{"type": "text", "text": TITLE_SYSTEM, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "Generate a title for this conversation:\n", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "\"Run echo hi with your bash tool, then say done.\"", "cache_control": {"type": "ephemeral"}}
        ]}]
    })
}

fn bash_tool() -> Value {
    json!({"name": "bash", "description": "Runs a command.", "input_schema": {"type": "object"}})
}

#[test]
fn opencode_title_is_a_side_call() {
    assert_eq!(
        anthropic(&opencode_title(), &HeaderMap::new()),
        Some(SideCall::OpenCodeTitle)
    );
    // An empty tool list offers no tools either.
    let mut body = opencode_title();
    body["tools"] = json!([]);
    assert_eq!(
        anthropic(&body, &HeaderMap::new()),
        Some(SideCall::OpenCodeTitle)
    );
}

/// The same instruction in a request that offers tools, or that has a conversation in it,
/// is a conversation: it stays managed.
#[test]
fn title_look_alikes_are_conversations() {
    let mut with_tools = opencode_title();
    with_tools["tools"] = json!([bash_tool()]);
    assert_eq!(anthropic(&with_tools, &HeaderMap::new()), None);

    let mut with_history = opencode_title();
    with_history["messages"] = json!([
        {"role": "user", "content": "Generate a title for this conversation:\nfix the build"},
        {"role": "assistant", "content": "Fixing the build"},
        {"role": "user", "content": "now a shorter one"}
    ]);
    assert_eq!(anthropic(&with_history, &HeaderMap::new()), None);

    let mut other_prompt = opencode_title();
    other_prompt["messages"] =
        json!([{"role": "user", "content": "what is a good title for a book?"}]);
    assert_eq!(anthropic(&other_prompt, &HeaderMap::new()), None);
}

/// OpenCode's compaction on the Chat wire: system message, one user message.
#[test]
fn opencode_compaction_on_chat_is_a_side_call() {
    let body = json!({
        "model": "fake-model", "max_tokens": 8192, "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [
            {"role": "system", "content": OPENCODE_SUMMARY_SYSTEM},
            {"role": "user", "content": "Here is the conversation so far:\n\n<conversation>\n[User]: run echo hi\n[Assistant tool call]: bash({\"command\":\"echo hi\"})\n[Tool result]: hi\n</conversation>\n\n## Objective\n..."}
        ]
    });
    assert_eq!(chat(&body), Some(SideCall::OpenCodeCompaction));

    let mut two_users = body.clone();
    two_users["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "user", "content": "and also this"}));
    assert_eq!(chat(&two_users), None);
}

#[test]
fn pi_compaction_is_a_side_call_and_its_look_alike_is_not() {
    let body = json!({
        "model": "fake-model", "max_tokens": 13107, "stream": true,
        "system": [{"type": "text", "text": PI_SUMMARY_SYSTEM}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "<conversation>\n[User]: Run echo hi\n[Assistant]: done\n</conversation>\n\nThe messages above are a conversation to summarize. Create a structured context checkpoint summary."}]}]
    });
    assert_eq!(
        anthropic(&body, &HeaderMap::new()),
        Some(SideCall::PiCompaction)
    );

    // A conversation whose user merely asks for a summary is not one.
    let mut asked = body.clone();
    asked["messages"] =
        json!([{"role": "user", "content": "summarize our last conversation please"}]);
    assert_eq!(anthropic(&asked, &HeaderMap::new()), None);
}

/// Codex marks its compaction in a header; any other request kind is a turn.
#[test]
fn codex_compaction_is_named_by_its_turn_metadata() {
    let body = json!({
        "model": "fake-model", "max_tokens": 1024,
        "tools": [],
        "messages": [
            {"role": "user", "content": "Run echo hi"},
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM."}
        ]
    });
    let mut headers = HeaderMap::new();
    headers.insert(
        CODEX_TURN_METADATA,
        HeaderValue::from_static(r#"{"turn_id":"t1","request_kind":"compaction"}"#),
    );
    assert_eq!(anthropic(&body, &headers), Some(SideCall::CodexCompaction));
    headers.insert(
        CODEX_TURN_METADATA,
        HeaderValue::from_static(r#"{"turn_id":"t1","request_kind":"turn"}"#),
    );
    assert_eq!(anthropic(&body, &headers), None);
}
