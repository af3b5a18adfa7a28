//! The Anthropic Messages SSE stream for one reply, event by event as the provider sends it:
//! `message_start` (input and cache usage), a `ping`, per block `content_block_start`,
//! deltas (`text_delta`, `input_json_delta`, `thinking_delta` then `signature_delta`) and
//! `content_block_stop`, then `message_delta` (stop reason, output tokens) and `message_stop`.
//!
//! Every payload goes through mc-wire's [`StreamEvent`] and is framed with
//! [`mc_wire::sse::encode_event`], so what a client receives is exactly what the proxy's
//! decoder and [`mc_wire::anthropic::MessageAccumulator`] read.

use mc_core::Part;
use mc_wire::anthropic::StreamEvent;
use mc_wire::sse::encode_event;
use serde_json::{Value, json};

use super::anthropic::{tool_input, usage_json};
use super::body::{DELTA_CHARS, pieces};
use super::reply::Reply;
use crate::CallRecord;

/// The SSE-encoded events of `reply`, one string per event.
pub(crate) fn events(
    id: &str,
    model: &str,
    reply: &Reply,
    record: &CallRecord,
) -> Result<Vec<String>, serde_json::Error> {
    // The provider reports a token or so of output at the start and the total at the end.
    let start_usage = usage_json(record, record.output_tokens.min(1));
    let mut payloads = vec![
        json!({
            "type": "message_start",
            "message": {
                "id": id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": start_usage,
            },
        }),
        json!({ "type": "ping" }),
    ];
    let blocks = reply.parts.iter().filter(|part| is_generated(part));
    for (index, part) in blocks.enumerate() {
        block_events(index, part, &mut payloads);
    }
    payloads.push(json!({
        "type": "message_delta",
        "delta": { "stop_reason": reply.stop_reason.as_anthropic(), "stop_sequence": null },
        "usage": { "output_tokens": record.output_tokens },
    }));
    payloads.push(json!({ "type": "message_stop" }));
    payloads.into_iter().map(encode).collect()
}

fn is_generated(part: &Part) -> bool {
    matches!(
        part,
        Part::Text { .. }
            | Part::ToolCall { .. }
            | Part::Thinking { .. }
            | Part::RedactedThinking { .. }
    )
}

/// The start, deltas and stop of block `index`.
fn block_events(index: usize, part: &Part, out: &mut Vec<Value>) {
    let delta =
        |delta: Value| json!({ "type": "content_block_delta", "index": index, "delta": delta });
    let start = match part {
        Part::Text { .. } => json!({ "type": "text", "text": "" }),
        Part::ToolCall { id, name, .. } => {
            json!({ "type": "tool_use", "id": id, "name": name, "input": {} })
        }
        Part::Thinking { .. } => json!({ "type": "thinking", "thinking": "" }),
        Part::RedactedThinking { data } => json!({ "type": "redacted_thinking", "data": data }),
        Part::ToolResult { .. } | Part::Media { .. } | Part::Unknown { .. } => return,
    };
    out.push(json!({ "type": "content_block_start", "index": index, "content_block": start }));
    match part {
        Part::Text { text, .. } => {
            for piece in pieces(text, DELTA_CHARS) {
                out.push(delta(json!({ "type": "text_delta", "text": piece })));
            }
        }
        Part::ToolCall { input, .. } => {
            // The provider opens every tool input with an empty fragment.
            out.push(delta(
                json!({ "type": "input_json_delta", "partial_json": "" }),
            ));
            let input = tool_input(input);
            let is_empty = input.as_object().is_some_and(|object| object.is_empty());
            if !is_empty {
                for piece in pieces(&input.to_string(), DELTA_CHARS) {
                    out.push(delta(
                        json!({ "type": "input_json_delta", "partial_json": piece }),
                    ));
                }
            }
        }
        Part::Thinking { text, signature } => {
            for piece in pieces(text, DELTA_CHARS) {
                out.push(delta(
                    json!({ "type": "thinking_delta", "thinking": piece }),
                ));
            }
            let signature = signature.as_deref().unwrap_or("");
            out.push(delta(
                json!({ "type": "signature_delta", "signature": signature }),
            ));
        }
        Part::RedactedThinking { .. }
        | Part::ToolResult { .. }
        | Part::Media { .. }
        | Part::Unknown { .. } => {}
    }
    out.push(json!({ "type": "content_block_stop", "index": index }));
}

/// One event through mc-wire's type, framed for SSE with its type as the event name.
fn encode(payload: Value) -> Result<String, serde_json::Error> {
    let event: StreamEvent = serde_json::from_value(payload)?;
    let data = String::from_utf8_lossy(&event.encode()).into_owned();
    Ok(encode_event(Some(event.type_name()), &data))
}
