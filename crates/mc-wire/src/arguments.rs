//! Function-call arguments: JSON written as text inside a JSON string (OpenAI Chat and
//! Responses), read as the value it holds where a stored message can keep that value.

use mc_core::{MAX_INPUT_NESTING, value_nesting};
use serde_json::Value;

/// The value `arguments` hold when they are JSON nested within [`MAX_INPUT_NESTING`] that
/// writes back as the very same text; `None` otherwise, and the caller keeps them as the text
/// they are.
///
/// Arguments go back upstream as [`tool_input_text`] writes the value, and the provider's
/// cache and the model both see those bytes: text with spaces, a repeated key or an escaped
/// letter (`{"a": 1}`, `\u00e9`) parses fine but would go back compact, deduplicated and
/// unescaped, so it stays text. Models write compact arguments, which are read as values.
///
/// A JSON string literal (`"ls"`, quotes included) stays text too: a stored input that is a
/// string means the arguments' raw text, so reading `"ls"` as the string `ls` would send
/// `ls` back where the client wrote `"ls"`.
pub(crate) fn parse_arguments(arguments: &str) -> Option<Value> {
    let value: Value = serde_json::from_str(arguments).ok()?;
    (!value.is_string()
        && value_nesting(&value) <= MAX_INPUT_NESTING
        && serde_json::to_string(&value).is_ok_and(|text| text == arguments))
    .then_some(value)
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

    #[test]
    fn json_that_would_not_write_back_the_same_is_left_as_text() {
        for arguments in [
            r#"{"path": "a.rs"}"#,
            r#"{"path":"a.rs","path":"b.rs"}"#,
            r#"{"path":"caf\u00e9.rs"}"#,
            r#"{"ratio":1E3}"#,
            "{\"path\":\"a.rs\"}\n",
        ] {
            assert_eq!(parse_arguments(arguments), None, "{arguments}");
        }
    }

    #[test]
    fn numbers_are_read_with_every_digit() {
        for arguments in [
            r#"{"offset":18446744073709551617}"#,
            r#"{"ratio":0.10000000000000000555}"#,
            r#"{"exp":-2.5e-3,"small":1.0}"#,
        ] {
            let value = parse_arguments(arguments)
                .unwrap_or_else(|| panic!("compact JSON is read: {arguments}"));
            assert_eq!(tool_input_text(&value), arguments);
        }
    }

    proptest::proptest! {
        /// Whatever the client wrote, the text the stored input goes back as is that text.
        #[test]
        fn arguments_go_back_byte_for_byte(arguments in arguments_text()) {
            let input = parse_arguments(&arguments).unwrap_or_else(|| Value::String(arguments.clone()));
            proptest::prop_assert_eq!(tool_input_text(&input), arguments);
        }
    }

    /// Argument texts as clients write them: compact and spaced JSON, escapes, numbers of
    /// every shape, repeated keys, and text that is not JSON at all.
    fn arguments_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let key = prop::sample::select(vec!["path", "a", "caf\\u00e9", "n"]);
        let scalar = prop::sample::select(vec![
            "1",
            "-0",
            "1.0",
            "1e3",
            "18446744073709551617",
            "0.10000000000000000555",
            "\"x\"",
            "\"\\u00e9\"",
            "true",
            "null",
            "[]",
            "[1, 2]",
        ]);
        let space = prop::sample::select(vec!["", " ", "\n  "]);
        let pair = (key, space.clone(), scalar)
            .prop_map(|(key, space, value)| format!("\"{key}\":{space}{value}"));
        prop_oneof![
            (prop::collection::vec(pair, 0..4), space)
                .prop_map(|(pairs, space)| format!("{{{space}{}}}", pairs.join(","))),
            ".{0,24}",
        ]
    }
}
