//! The Chat Completions SSE stream for one reply: a first chunk with the role, content
//! pieces, each tool call announced (id, name) then its arguments in fragments, a closing
//! chunk with `finish_reason`, with `stream_options.include_usage` a last chunk with no
//! choices carrying usage (earlier chunks then say `"usage": null`), and `data: [DONE]`.

use mc_wire::openai::ChatChunk;
use mc_wire::sse::encode_event;
use serde_json::{Map, Value, json};

use super::body::{DELTA_CHARS, pieces};
use super::openai::{Head, SYSTEM_FINGERPRINT, arguments, usage_json};
use super::reply::Reply;
use crate::CallRecord;

/// The SSE-encoded chunks of `reply`, `[DONE]` included.
pub(crate) fn events(
    head: &Head,
    reply: &Reply,
    record: &CallRecord,
    include_usage: bool,
) -> Result<Vec<String>, serde_json::Error> {
    let chunk = |choices: Value, usage: Option<Value>| {
        let mut chunk = json!({
            "id": head.id,
            "object": "chat.completion.chunk",
            "created": head.created_s,
            "model": head.model,
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "choices": choices,
        });
        if let (true, Some(object)) = (include_usage, chunk.as_object_mut()) {
            object.insert("usage".to_owned(), usage.unwrap_or(Value::Null));
        }
        chunk
    };
    let step = |delta: Value, finish_reason: Value| {
        chunk(
            json!([{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason }]),
            None,
        )
    };
    let text = reply.text();
    let mut payloads = vec![step(
        json!({ "role": "assistant", "content": text.as_ref().map(|_| ""), "refusal": null }),
        Value::Null,
    )];
    for piece in pieces(text.as_deref().unwrap_or(""), DELTA_CHARS) {
        payloads.push(step(json!({ "content": piece }), Value::Null));
    }
    for (index, (id, name, input)) in reply.tool_calls().enumerate() {
        payloads.push(step(
            json!({ "tool_calls": [{
                "index": index, "id": id, "type": "function",
                "function": { "name": name, "arguments": "" },
            }] }),
            Value::Null,
        ));
        for piece in pieces(&arguments(input), DELTA_CHARS) {
            payloads.push(step(
                json!({ "tool_calls": [{ "index": index, "function": { "arguments": piece } }] }),
                Value::Null,
            ));
        }
    }
    payloads.push(step(
        Value::Object(Map::new()),
        json!(reply.stop_reason.as_openai()),
    ));
    if include_usage {
        payloads.push(chunk(json!([]), Some(usage_json(record))));
    }
    let mut events = payloads
        .into_iter()
        .map(encode)
        .collect::<Result<Vec<_>, _>>()?;
    events.push(encode_event(None, "[DONE]"));
    Ok(events)
}

/// One chunk through mc-wire's type, framed as an unnamed SSE event.
fn encode(payload: Value) -> Result<String, serde_json::Error> {
    let chunk: ChatChunk = serde_json::from_value(payload)?;
    let data = String::from_utf8_lossy(&chunk.encode()).into_owned();
    Ok(encode_event(None, &data))
}
