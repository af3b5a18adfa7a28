//! The skeleton of a tool call whose result was dropped recently.
//!
//! The model keeps seeing what it did (tool name, which file, which command) at a fraction of
//! the cost, and the call/result pair stays valid for the provider.

use serde_json::Value;

/// Longest string input kept in a skeleton, in characters.
pub const SKELETON_INPUT_CHARS: usize = 80;
/// Appended to a clipped string so the model knows it was cut.
pub const CLIP_MARK: &str = "…";

/// The call's input with long string values clipped.
///
/// A top-level string input (OpenAI arguments that were not JSON) and each string value of a
/// top-level object are clipped to [`SKELETON_INPUT_CHARS`] characters plus [`CLIP_MARK`];
/// numbers, booleans, nulls, arrays and nested objects are kept as they are, and key order
/// is preserved, so the skeleton is a pure function of the stored call.
pub fn skeleton_input(input: &Value) -> Value {
    match input {
        Value::String(text) => Value::String(clip(text)),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(key, value)| {
                    let value = match value {
                        Value::String(text) => Value::String(clip(text)),
                        other => other.clone(),
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn clip(text: &str) -> String {
    match text.char_indices().nth(SKELETON_INPUT_CHARS) {
        Some((cut, _)) => format!("{}{CLIP_MARK}", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn clips_strings_and_keeps_the_rest() {
        let long = "é".repeat(100);
        let input = json!({"path": "src/main.rs", "content": long, "line": 4, "opts": {"x": long}});
        let clipped = format!("{}…", "é".repeat(80));
        assert_eq!(
            skeleton_input(&input),
            json!({"path": "src/main.rs", "content": clipped, "line": 4, "opts": {"x": long}})
        );
        assert_eq!(skeleton_input(&json!(long)), json!(clipped));
        assert_eq!(
            skeleton_input(&json!("x".repeat(80))),
            json!("x".repeat(80))
        );
        assert_eq!(skeleton_input(&json!([1, 2])), json!([1, 2]));
    }
}
