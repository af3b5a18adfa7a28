//! Decode + encode of Anthropic request bodies against a bare `serde_json::Value` parse +
//! serialise of the same bytes, the baseline the proxy's added latency is judged against.
//!
//! Bodies: the largest recorded Claude Code request, and synthetic conversations of about
//! 20K, 200K and 800K tokens (tool calls and results of realistic size). Compare the ratio
//! of the `codec` row to the `baseline` row at each size; absolute times on shared machines
//! are noise.

use divan::{Bencher, black_box};
use mc_wire::anthropic::MessagesRequest;
use serde_json::{Value, json};

fn main() {
    divan::main();
}

const SIZES_TOKENS: [usize; 3] = [20_000, 200_000, 800_000];

/// A Claude Code-shaped body of roughly `tokens` tokens (4 bytes per token).
fn synthetic_body(tokens: usize) -> Vec<u8> {
    let mut messages = vec![
        json!({"role": "user", "content": [{"type": "text", "text": "Fix the failing test in the parser."}]}),
    ];
    let output =
        "line of tool output with some code: fn parse(input: &str) -> Result<Ast> { todo }\n"
            .repeat(24);
    let mut turn = 0;
    while messages.iter().map(|m| m.to_string().len()).sum::<usize>() < tokens * 4 {
        let id = format!("toolu_{turn:08}");
        messages.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": "Let me look at the next file."},
            {"type": "tool_use", "id": id, "name": "Bash", "input": {"command": format!("cat src/file_{turn}.rs"), "description": "Read a file"}}
        ]}));
        messages.push(json!({"role": "user", "content": [
            {"tool_use_id": id, "type": "tool_result", "content": output, "is_error": false}
        ]}));
        turn += 1;
    }
    let body = json!({
        "model": "claude-sonnet-4-5",
        "messages": messages,
        "temperature": 1,
        "system": [{"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "Bash", "description": "Run a command", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}],
        "metadata": {"user_id": "user_abc_account__session_123"},
        "max_tokens": 32000,
        "stream": true
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

#[divan::bench(args = SIZES_TOKENS)]
fn codec(bencher: Bencher, tokens: usize) {
    let body = synthetic_body(tokens);
    assert_eq!(
        MessagesRequest::decode(&body, usize::MAX)
            .map(|r| r.encode())
            .ok(),
        Some(body.clone())
    );
    bencher.bench(|| {
        let request = MessagesRequest::decode(black_box(&body), usize::MAX);
        request.map(|request| request.encode().len()).unwrap_or(0)
    });
}

#[divan::bench(args = SIZES_TOKENS)]
fn baseline(bencher: Bencher, tokens: usize) {
    let body = synthetic_body(tokens);
    bencher.bench(|| {
        let value: Result<Value, _> = serde_json::from_slice(black_box(&body));
        value
            .ok()
            .and_then(|value| serde_json::to_vec(&value).ok())
            .map_or(0, |bytes| bytes.len())
    });
}
