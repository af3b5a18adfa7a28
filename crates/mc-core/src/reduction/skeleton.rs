//! The skeleton of a tool call: its name, which file, which command, with long strings cut.
//!
//! Used for a call whose result was dropped recently, and for a call whose own input was
//! reclaimed (a whole file written, a long patch, once superseded or aged). The model keeps
//! seeing what it did at a fraction of the cost, and the call/result pair stays valid for the
//! provider on every wire, since only argument values change, never the call's id or name.

use serde_json::Value;

use crate::thousands;

/// Longest string input kept in a skeleton, in characters.
pub const SKELETON_INPUT_CHARS: usize = 80;
/// Appended to a clipped string so the model knows it was cut.
pub const CLIP_MARK: &str = "…";

/// The call's input with long string values clipped, at any depth.
///
/// Every string (a top-level string, as OpenAI arguments that were not JSON, and every string
/// value inside objects and arrays, e.g. the `edits` of a multi-edit call) longer than
/// [`SKELETON_INPUT_CHARS`] characters keeps its first [`SKELETON_INPUT_CHARS`] characters,
/// then [`CLIP_MARK`] and the size that was cut (`…[+4,210 chars]`), so the model knows how
/// large the original was. Numbers, booleans, nulls and key order are kept, so the skeleton
/// is a pure function of the stored call.
pub fn skeleton_input(input: &Value) -> Value {
    match input {
        Value::String(text) => Value::String(clip(text)),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(key, value)| (key.clone(), skeleton_input(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(skeleton_input).collect()),
        other => other.clone(),
    }
}

fn clip(text: &str) -> String {
    match text.char_indices().nth(SKELETON_INPUT_CHARS) {
        Some((cut, _)) => {
            let cut_chars = text[cut..].chars().count();
            format!(
                "{}{CLIP_MARK}[+{} chars]",
                &text[..cut],
                thousands(cut_chars as u64)
            )
        }
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn clips_strings_at_any_depth_and_keeps_the_rest() {
        let long = "é".repeat(100);
        let input = json!({
            "path": "src/main.rs",
            "content": long,
            "line": 4,
            "opts": {"x": long},
            "edits": [{"old_string": long, "new_string": "y"}]
        });
        let clipped = format!("{}…[+20 chars]", "é".repeat(80));
        assert_eq!(
            skeleton_input(&input),
            json!({
                "path": "src/main.rs",
                "content": clipped,
                "line": 4,
                "opts": {"x": clipped},
                "edits": [{"old_string": clipped, "new_string": "y"}]
            })
        );
        assert_eq!(skeleton_input(&json!(long)), json!(clipped));
        assert_eq!(
            skeleton_input(&json!("x".repeat(80))),
            json!("x".repeat(80))
        );
        assert_eq!(skeleton_input(&json!([1, 2])), json!([1, 2]));
    }
}
