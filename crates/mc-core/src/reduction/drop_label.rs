//! What a dropped tool exchange was, said in the words its placeholder keeps.
//!
//! A bare `[dropped §12§]` tells the model that something went, not what: when its next answer
//! needs the file it read there, it cannot know the read is gone or what to re-read. The label
//! names the tool, its main argument and the size of the output (`Read src/card_parser.py,
//! 240 lines`), so the placeholder says what it was and the name survives the drop.
//!
//! A label is a pure function of the stored call and result (the raw log never changes), taken
//! when the pair is folded ([`super::ToolPairs`]), so every later render of the same drop
//! gives the same bytes.

use std::sync::Arc;

use serde_json::Value;

use crate::conversation::Part;

/// The most characters a label's argument keeps: a path or a command line, not a script.
pub const MAX_ARGUMENT_CHARS: usize = 80;

/// Input fields that name what a call acted on, most telling first (file tools, shells,
/// searches, fetches; Claude Code's snake case and OpenCode's camel case). A call with none
/// of them is labelled by its first string input.
const MAIN_ARGUMENTS: [&str; 10] = [
    "file_path",
    "filePath",
    "path",
    "notebook_path",
    "command",
    "cmd",
    "pattern",
    "query",
    "url",
    "description",
];

/// The call's part of a label: its tool name and main argument on one line
/// (`Read src/card_parser.py`), or its name alone when no input is a string.
pub fn call_label(name: &str, input: &Value) -> String {
    match main_argument(input) {
        Some(argument) => format!("{} {}", one_line(name, MAX_ARGUMENT_CHARS), argument),
        None => one_line(name, MAX_ARGUMENT_CHARS),
    }
}

/// The label of a dropped result: its call's label (when the call is known) and how many
/// lines of text it held (`Read src/a.py, 240 lines`). `None` when there is nothing to say
/// (no call and no text), so the placeholder stays bare.
pub fn result_label(call: Option<&str>, content: &[Part]) -> Option<Arc<str>> {
    let lines: usize = content
        .iter()
        .map(|part| match part {
            Part::Text { text, .. } if !text.is_empty() => text.trim_end().lines().count(),
            _ => 0,
        })
        .sum();
    let size = match lines {
        0 => None,
        1 => Some("1 line".to_owned()),
        many => Some(format!("{many} lines")),
    };
    let label = match (call, size) {
        (Some(call), Some(size)) => format!("{call}, {size}"),
        (Some(call), None) => call.to_owned(),
        (None, Some(size)) => size,
        (None, None) => return None,
    };
    Some(label.into())
}

/// The input a call is best known by: the first of [`MAIN_ARGUMENTS`] that is a non-empty
/// string (or a list of strings, as an argv: Codex's `shell` sends its command so), else the
/// first non-empty string input; clipped to one line.
fn main_argument(input: &Value) -> Option<String> {
    let object = input.as_object()?;
    let named = MAIN_ARGUMENTS
        .iter()
        .filter_map(|key| argument_text(object.get(*key)?));
    let any = object
        .values()
        .filter_map(|value| value.as_str().map(str::to_owned));
    named
        .chain(any)
        .find(|text| !text.trim().is_empty())
        .map(|text| one_line(&text, MAX_ARGUMENT_CHARS))
}

/// A string as it is, a list of strings joined by spaces; nothing else names a call.
fn argument_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Array(items) => items
            .iter()
            .map(Value::as_str)
            .collect::<Option<Vec<&str>>>()
            .map(|words| words.join(" ")),
        _ => None,
    }
}

/// `text` on one line (its first non-blank line), cut to `max` characters with `…` when
/// longer or when more lines followed.
fn one_line(text: &str, max: usize) -> String {
    let trimmed = text.trim();
    let first = trimmed.lines().map(str::trim).find(|line| !line.is_empty());
    let first = first.unwrap_or("");
    let more_lines = first.len() < trimmed.len();
    let mut line: String = first.chars().take(max).collect();
    if more_lines || first.chars().count() > max {
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    #[test]
    fn a_read_is_labelled_by_its_path_and_size() {
        let call = call_label(
            "Read",
            &json!({"file_path": "src/card_parser.py", "limit": 40}),
        );
        assert_eq!(call, "Read src/card_parser.py");
        let label = result_label(Some(&call), &[Part::text("a\nb\nc\n")]).unwrap();
        assert_eq!(&*label, "Read src/card_parser.py, 3 lines");
    }

    #[test]
    fn a_shell_call_keeps_the_first_line_of_its_command() {
        let call = call_label(
            "Bash",
            &json!({"description": "run tests", "command": "cd repo\npytest -k foo"}),
        );
        assert_eq!(call, "Bash cd repo…");
        let long = "x".repeat(200);
        let clipped = call_label("Bash", &json!({ "command": long }));
        assert_eq!(
            clipped.chars().count(),
            "Bash ".len() + MAX_ARGUMENT_CHARS + 1
        );
    }

    #[test]
    fn without_a_known_field_the_first_string_input_names_the_call() {
        assert_eq!(
            call_label("lookup", &json!({"limit": 3, "symbol": "parse_card"})),
            "lookup parse_card"
        );
        assert_eq!(call_label("list", &json!({"limit": 3})), "list");
        // OpenCode names its path in camel case; Codex's shell sends an argv.
        assert_eq!(
            call_label("read", &json!({"filePath": "/repo/src/a.ts", "limit": 3})),
            "read /repo/src/a.ts"
        );
        assert_eq!(
            call_label(
                "shell",
                &json!({"command": ["bash", "-lc", "cargo test"], "workdir": "/repo"})
            ),
            "shell bash -lc cargo test"
        );
        assert_eq!(call_label("raw", &json!("not an object")), "raw");
    }

    #[test]
    fn nothing_to_say_leaves_the_placeholder_bare() {
        assert_eq!(result_label(None, &[]), None);
        assert_eq!(result_label(None, &[Part::text("")]), None);
        assert_eq!(
            result_label(None, &[Part::text("one")]).as_deref(),
            Some("1 line")
        );
    }

    proptest! {
        /// A label is one line, bounded, and the same every time it is taken.
        #[test]
        fn labels_are_bounded_single_lines(
            name in "[A-Za-z_]{1,12}",
            argument in "\\PC{0,300}",
            output in "\\PC{0,300}",
        ) {
            let call = call_label(&name, &json!({ "command": argument }));
            prop_assert!(!call.contains('\n'));
            prop_assert!(call.chars().count() <= name.len() + 1 + MAX_ARGUMENT_CHARS + 1);
            let first = result_label(Some(&call), &[Part::text(output.clone())]);
            prop_assert_eq!(&first, &result_label(Some(&call), &[Part::text(output)]));
            prop_assert!(first.is_some_and(|label| !label.contains('\n')));
        }
    }
}
