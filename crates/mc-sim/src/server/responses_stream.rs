//! The Responses SSE stream for one reply, in OpenAI's order: `response.created`,
//! `response.in_progress`, then per output item `response.output_item.added`, its content
//! (`content_part.added`, `output_text.delta` pieces, `output_text.done`,
//! `content_part.done` for a message; `function_call_arguments.delta` pieces and `.done` for
//! a call) and `response.output_item.done`, then `response.completed` with the whole
//! response and its usage. Every event is named by its type and numbered. A response refused
//! after it started ends with `response.failed` instead, before any output.

use mc_wire::responses::{Content, ContentPart, Item, StreamEvent};
use mc_wire::sse::encode_event;
use serde_json::{Value, json};

use super::body::{DELTA_CHARS, pieces};
use super::responses::{ResponseHead, response};
use crate::CallRecord;

/// The SSE-encoded events of a response whose output is `output`.
pub(crate) fn events(
    head: &ResponseHead,
    output: &[Item],
    record: &CallRecord,
) -> Result<Vec<String>, serde_json::Error> {
    let mut payloads: Vec<Value> = Vec::new();
    let started = serde_json::to_value(response(head, "in_progress", Vec::new(), None)?)?;
    payloads.push(json!({"type": "response.created", "response": started}));
    payloads.push(json!({"type": "response.in_progress", "response": started}));
    for (index, item) in output.iter().enumerate() {
        let done = serde_json::to_value(item)?;
        let item_id = done.get("id").cloned().unwrap_or(Value::Null);
        let mut added = done.clone();
        if let Some(object) = added.as_object_mut() {
            object.insert("status".to_owned(), json!("in_progress"));
            match item {
                Item::Message(_) => {
                    object.insert("content".to_owned(), json!([]));
                }
                Item::FunctionCall(_) => {
                    object.insert("arguments".to_owned(), json!(""));
                }
                Item::CustomToolCall(_)
                | Item::ToolOutput(_)
                | Item::Reasoning(_)
                | Item::Other(_) => {}
            }
        }
        payloads.push(
            json!({"type": "response.output_item.added", "output_index": index, "item": added}),
        );
        match item {
            Item::Message(message) => {
                let text = match &message.content {
                    Content::Parts(parts) => parts
                        .iter()
                        .filter_map(|part| match part {
                            ContentPart::Text(part) => Some(part.text.as_str()),
                            ContentPart::Refusal(_) | ContentPart::Other(_) => None,
                        })
                        .collect::<String>(),
                    Content::Text(text) => text.clone(),
                };
                let at = json!({"item_id": item_id, "output_index": index, "content_index": 0});
                let with = |kind: &str, extra: Value| {
                    let mut event = at.clone();
                    if let (Some(event), Value::Object(extra)) = (event.as_object_mut(), extra) {
                        event.insert("type".to_owned(), json!(kind));
                        event.extend(extra);
                    }
                    event
                };
                let empty_part = json!({"type": "output_text", "text": "", "annotations": []});
                payloads.push(with(
                    "response.content_part.added",
                    json!({"part": empty_part}),
                ));
                for piece in pieces(&text, DELTA_CHARS) {
                    payloads.push(with(
                        "response.output_text.delta",
                        json!({"delta": piece, "logprobs": []}),
                    ));
                }
                payloads.push(with(
                    "response.output_text.done",
                    json!({"text": text, "logprobs": []}),
                ));
                let part = json!({"type": "output_text", "text": text, "annotations": []});
                payloads.push(with("response.content_part.done", json!({"part": part})));
            }
            Item::FunctionCall(call) => {
                for piece in pieces(&call.arguments, DELTA_CHARS) {
                    payloads.push(json!({"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": index, "delta": piece}));
                }
                payloads.push(json!({"type": "response.function_call_arguments.done", "item_id": item_id, "output_index": index, "arguments": call.arguments}));
            }
            Item::CustomToolCall(_) | Item::ToolOutput(_) | Item::Reasoning(_) | Item::Other(_) => {
            }
        }
        payloads.push(
            json!({"type": "response.output_item.done", "output_index": index, "item": done}),
        );
    }
    let completed = response(head, "completed", output.to_vec(), Some(record))?;
    payloads.push(json!({"type": "response.completed", "response": completed}));
    numbered(payloads)
}

/// The SSE-encoded events of a response refused after it started: `response.created`,
/// `response.in_progress`, then `response.failed` whose response carries `error`.
pub(crate) fn failed_events(
    head: &ResponseHead,
    error: Value,
) -> Result<Vec<String>, serde_json::Error> {
    let started = serde_json::to_value(response(head, "in_progress", Vec::new(), None)?)?;
    let mut failed = serde_json::to_value(response(head, "failed", Vec::new(), None)?)?;
    if let Some(object) = failed.as_object_mut() {
        object.insert("error".to_owned(), error);
    }
    numbered(vec![
        json!({"type": "response.created", "response": started}),
        json!({"type": "response.in_progress", "response": started}),
        json!({"type": "response.failed", "response": failed}),
    ])
}

/// `payloads` numbered in order (`sequence_number`) and encoded.
fn numbered(payloads: Vec<Value>) -> Result<Vec<String>, serde_json::Error> {
    payloads
        .into_iter()
        .enumerate()
        .map(|(sequence, mut payload)| {
            if let Some(object) = payload.as_object_mut() {
                object.insert("sequence_number".to_owned(), json!(sequence));
            }
            encode(payload)
        })
        .collect()
}

/// One event through mc-wire's type, framed as an SSE event named by its type.
fn encode(payload: Value) -> Result<String, serde_json::Error> {
    let event: StreamEvent = serde_json::from_value(payload)?;
    let data = String::from_utf8_lossy(&event.encode()).into_owned();
    Ok(encode_event(Some(&event.kind), &data))
}
