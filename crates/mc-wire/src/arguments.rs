//! Function-call arguments: JSON written as text inside a JSON string (OpenAI Chat and
//! Responses), read as the value it holds where a stored message can keep that value.

use mc_core::{MAX_INPUT_NESTING, value_nesting};
use serde_json::Value;

/// The value `arguments` hold when they are JSON nested within [`MAX_INPUT_NESTING`]; `None`
/// otherwise, and the caller keeps them as the text they are.
///
/// A JSON string literal (`"ls"`, quotes included) stays text too: a stored input that is a
/// string means the arguments' raw text, so reading `"ls"` as the string `ls` would send
/// `ls` back where the client wrote `"ls"`.
pub(crate) fn parse_arguments(arguments: &str) -> Option<Value> {
    let value: Value = serde_json::from_str(arguments).ok()?;
    (!value.is_string() && value_nesting(&value) <= MAX_INPUT_NESTING).then_some(value)
}

/// The text a tool input goes back as where the wire carries it as text (function-call
/// arguments, a custom tool's input): a string input is the raw text it was read as (broken
/// JSON, a JSON string literal, nesting too deep to store, free text) and goes back as it;
/// anything else was read from JSON and is written as JSON. [`parse_arguments`] reads it back
/// as the same input.
pub(crate) fn tool_input_text(input: &Value) -> String {
    match input {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn json_within_the_storable_nesting_is_read() {
        assert_eq!(
            parse_arguments(r#"{"command":"ls"}"#),
            Some(serde_json::json!({"command": "ls"}))
        );
        let within = nested(MAX_INPUT_NESTING);
        assert_eq!(parse_arguments(&within).unwrap().to_string(), within);
    }

    #[test]
    fn text_that_is_not_storable_json_is_left_as_text() {
        for arguments in [
            nested(MAX_INPUT_NESTING + 1),
            nested(127),
            nested(10_000),
            "{\"cut".into(),
            r#""ls""#.into(),
            r#" "{\"command\":\"ls\"}" "#.into(),
        ] {
            assert_eq!(parse_arguments(&arguments), None, "{arguments:.40}");
        }
    }
}
