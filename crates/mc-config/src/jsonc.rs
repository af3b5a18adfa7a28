//! Reading one JSONC config file into a JSON value.
//!
//! JSONC here means JSON plus `//` and `/* */` comments and trailing commas, as in VS Code
//! settings. The other JSON5 liberties the parser offers (missing commas, single quotes, hex
//! numbers, bare keys) stay off: a missing comma is almost always a typo, and accepting it
//! silently would make the file mean something other than what the user wrote.

use std::io;
use std::path::Path;

use jsonc_parser::ParseOptions;
use serde_json::{Map, Value};

use crate::error::FileError;

/// The settings object in the file at `path`, `Ok(None)` when there is no such file.
///
/// An empty file (or one holding only comments) is an empty object.
pub fn read_jsonc(path: &Path) -> Result<Option<Map<String, Value>>, FileError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(FileError::Read { source }),
    };
    parse_jsonc(&text).map(Some)
}

/// Parses JSONC text that must hold one object (or nothing).
pub fn parse_jsonc(text: &str) -> Result<Map<String, Value>, FileError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let options = ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    let value: Value =
        jsonc_parser::parse_to_serde_value(text, &options).map_err(|err| FileError::Syntax {
            line: err.line_display(),
            column: err.column_display(),
            message: err.kind().to_string(),
        })?;
    match value {
        Value::Object(object) => Ok(object),
        Value::Null => Ok(Map::new()),
        Value::Array(_) => Err(FileError::NotAnObject { found: "an array" }),
        Value::String(_) => Err(FileError::NotAnObject { found: "a string" }),
        Value::Number(_) => Err(FileError::NotAnObject { found: "a number" }),
        Value::Bool(_) => Err(FileError::NotAnObject { found: "a boolean" }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn comments_and_trailing_commas() {
        let text = "\u{feff}// user settings\n{\n  /* block */ \"pass\": {\"execute_threshold_percent\": 70,},\n}\n";
        let object = parse_jsonc(text).unwrap();
        assert_eq!(
            Value::Object(object),
            json!({"pass": {"execute_threshold_percent": 70}})
        );
        assert!(parse_jsonc("// nothing yet\n").unwrap().is_empty());
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        let err = parse_jsonc("{\n  \"a\": 1\n  \"b\": 2\n}").unwrap_err();
        let FileError::Syntax { line, column, .. } = &err else {
            panic!("{err:?}")
        };
        assert_eq!((*line, *column), (2, 9));
        assert_eq!(
            err.to_string(),
            "syntax error at line 2, column 9: Expected comma"
        );
    }

    #[test]
    fn top_level_must_be_an_object() {
        let err = parse_jsonc("[1, 2]").unwrap_err();
        assert!(matches!(err, FileError::NotAnObject { found: "an array" }));
    }

    #[test]
    fn missing_file_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            read_jsonc(&dir.path().join("absent.jsonc"))
                .unwrap()
                .is_none()
        );
        let err = read_jsonc(dir.path()).unwrap_err();
        assert!(matches!(err, FileError::Read { .. }));
    }
}
