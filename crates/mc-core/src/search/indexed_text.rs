//! The words of a message that full-text search indexes.
//!
//! For a coding agent the answer to "where did we see that error" usually sits in a tool
//! result, and "which file did we change" in a tool call's arguments, so both are indexed
//! beside the user's and the model's text. Reasoning is indexed too (it names files and
//! decisions). Media is indexed by its label (`[image 1280×720 png]`), never its payload: base64
//! would fill the index with noise that matches nothing. What carries no words is left out:
//! encrypted reasoning and the raw JSON of blocks we do not know (their keys would match every
//! query about "type").

use serde_json::Value;

use crate::media::media_label;
use crate::{Message, Part};

/// The searchable text of `message`: its texts, tool names, the string values of tool-call
/// arguments and tool results' texts, one per line.
pub fn indexed_text(message: &Message) -> String {
    let mut out = String::new();
    for part in &message.parts {
        push_part(part, &mut out);
    }
    out
}

fn push_part(part: &Part, out: &mut String) {
    match part {
        Part::Text { text, .. } | Part::Thinking { text, .. } => push_line(text, out),
        Part::ToolCall { name, input, .. } => {
            push_line(name, out);
            push_strings(input, out);
        }
        Part::ToolResult { content, .. } => {
            for inner in content {
                push_part(inner, out);
            }
        }
        Part::Media { media, source } => push_line(&media_label(*media, source), out),
        Part::RedactedThinking { .. } | Part::Unknown { .. } => {}
    }
}

/// Every string inside a JSON value (object keys left out: they are the tool's parameter
/// names, the same on every call).
fn push_strings(value: &Value, out: &mut String) {
    match value {
        Value::String(text) => push_line(text, out),
        Value::Array(items) => items.iter().for_each(|item| push_strings(item, out)),
        Value::Object(fields) => fields.values().for_each(|item| push_strings(item, out)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn push_line(text: &str, out: &mut String) {
    if text.is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(text);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Role;

    #[test]
    fn calls_results_and_texts_are_indexed_opaque_blocks_are_not() {
        let message = Message::new(
            Role::Assistant,
            vec![
                Part::text("Let me look."),
                Part::ToolCall {
                    id: "c1".into(),
                    name: "Bash".into(),
                    input: json!({"command": "grep -rn flaky src", "timeout": 30}),
                },
                Part::ToolResult {
                    call_id: "c1".into(),
                    content: vec![Part::text("src/lib.rs:3: flaky")],
                    is_error: false,
                },
                Part::RedactedThinking { data: "b64".into() },
                Part::Unknown {
                    type_name: "server_tool".into(),
                    raw: json!({"type": "server_tool"}),
                },
            ],
        );
        assert_eq!(
            indexed_text(&message),
            "Let me look.\nBash\ngrep -rn flaky src\nsrc/lib.rs:3: flaky"
        );
    }

    #[test]
    fn media_is_indexed_by_its_label_never_its_base64() {
        // A PNG header stating 1280×720, as base64.
        let data = "iVBORw0KGgoAAAANSUhEUgAABQAAAALQCAYAAAAAAAAA";
        let image = Part::Media {
            media: crate::MediaKind::Image,
            source: json!({"type": "base64", "media_type": "image/png", "data": data}),
        };
        let message = Message::new(
            Role::User,
            vec![
                Part::text("see the screenshot"),
                Part::ToolResult {
                    call_id: "c1".into(),
                    content: vec![image.clone()],
                    is_error: false,
                },
                image,
            ],
        );
        assert_eq!(
            indexed_text(&message),
            "see the screenshot\n[image 1280×720 png]\n[image 1280×720 png]"
        );
    }
}
