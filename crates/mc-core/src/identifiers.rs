//! Identifiers: the made names a conversation uses (paths, symbols, commands' arguments,
//! values), as opposed to the words it is written in.
//!
//! They are what a model needs back when its context was summarised: a file's name, a
//! function it wrote, a constant it set. The same definition decides what a compartment's
//! index keeps ([`crate::historian::range_index`]) and what replay counts as a reference the
//! model went on to use, so the two speak of the same things.

use serde_json::Value;

use crate::{Message, Part};

/// The shortest identifier: shorter runs (`i.e`, `x1`) match by chance.
pub const MIN_IDENTIFIER_CHARS: usize = 5;
/// The longest identifier: longer runs are data (base64, hashes of hashes).
pub const MAX_IDENTIFIER_CHARS: usize = 200;

/// Calls `each` with every identifier of `text`: a run of ASCII letters, digits, `_` and `.`
/// (outer dots trimmed) that has a letter and looks made rather than written: it holds `_`,
/// `.` or a digit, or changes case inside (`parseValue`). Paths split at `/`, so a file is
/// found by its name whatever directory prefix a command gave it.
pub fn identifiers<'t>(text: &'t str, each: &mut impl FnMut(&'t str)) {
    let is_word_byte = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'.';
    for run in text.split(|c: char| !(c.is_ascii() && is_word_byte(c as u8))) {
        let run = run.trim_matches('.');
        if is_identifier(run) {
            each(run);
        }
    }
}

/// The identifiers of every string in `value` (object keys are a tool's schema, not data).
pub fn value_identifiers(value: &Value, each: &mut impl FnMut(&str)) {
    match value {
        Value::String(text) => identifiers(text, each),
        Value::Array(items) => items.iter().for_each(|item| value_identifiers(item, each)),
        Value::Object(fields) => fields
            .values()
            .for_each(|field| value_identifiers(field, each)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// The identifiers of what a message shows the model: text, tool calls' inputs and tool
/// results. Reasoning is left out (providers drop earlier turns' reasoning from the prompt),
/// as are media and opaque blocks.
pub fn message_identifiers(message: &Message, each: &mut impl FnMut(&str)) {
    parts_identifiers(&message.parts, each);
}

/// [`message_identifiers`] of a list of parts.
pub fn parts_identifiers(parts: &[Part], each: &mut impl FnMut(&str)) {
    for part in parts {
        match part {
            Part::Text { text, .. } => identifiers(text, each),
            Part::ToolCall { input, .. } => value_identifiers(input, each),
            Part::ToolResult { content, .. } => parts_identifiers(content, each),
            Part::Thinking { .. }
            | Part::RedactedThinking { .. }
            | Part::Media { .. }
            | Part::Unknown { .. } => {}
        }
    }
}

fn is_identifier(run: &str) -> bool {
    let bytes = run.as_bytes();
    if !(MIN_IDENTIFIER_CHARS..=MAX_IDENTIFIER_CHARS).contains(&bytes.len())
        || !bytes.iter().any(u8::is_ascii_alphabetic)
    {
        return false;
    }
    let marked = bytes
        .iter()
        .any(|&byte| byte == b'_' || byte == b'.' || byte.is_ascii_digit());
    let inner_case_change = bytes
        .windows(2)
        .any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase());
    marked || inner_case_change
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_identifiers(text: &str) -> Vec<String> {
        let mut found = Vec::new();
        identifiers(text, &mut |id| found.push(id.to_owned()));
        found
    }

    #[test]
    fn identifiers_are_made_names_not_words() {
        assert_eq!(
            all_identifiers(
                "Open ./src/card_parser.py, then call parseValue (see line 12, i.e. v2.1.0); \
                 the HTTPServer and test42 stay. Done."
            ),
            ["card_parser.py", "parseValue", "v2.1.0", "test42"]
        );
        assert!(all_identifiers("plain words only, nothing MADE here").is_empty());
        assert!(all_identifiers(&format!("a_{}", "b".repeat(MAX_IDENTIFIER_CHARS))).is_empty());
        assert_eq!(all_identifiers("résumé_file.txt"), ["_file.txt"]);
    }
}
