//! Bad input gets a typed error with its position, never a panic.

use mc_wire::WireError;
use mc_wire::anthropic::{MessagesRequest, StreamEvent};
use proptest::prelude::*;

fn decode(body: &str) -> Result<MessagesRequest, WireError> {
    MessagesRequest::decode(body.as_bytes(), 1 << 20)
}

#[test]
fn malformed_json_names_line_and_column() {
    let error = decode("{\"model\": \"m\",\n \"messages\": [}").unwrap_err();
    assert_eq!(
        error,
        WireError::Syntax {
            line: 2,
            column: 15,
            reason: "expected value".into()
        }
    );
}

#[test]
fn a_cut_body_says_so() {
    let error = decode(r#"{"model": "m", "messages": [{"role": "user""#).unwrap_err();
    assert!(
        error.to_string().contains("the body was cut short"),
        "{error}"
    );
}

#[test]
fn wrong_types_name_the_path() {
    let cases = [
        (
            r#"{"messages": []}"#,
            "invalid value at `$`: missing required field `model`",
        ),
        (
            r#"{"model": 3, "messages": []}"#,
            "invalid value at `$.model`: expected a string, found a number",
        ),
        (
            r#"{"model": "m", "messages": [{"role": "user", "content": "a"}, {"role": "bot", "content": "b"}]}"#,
            "invalid value at `$.messages[1].role`: unknown role `bot`: expected `user`, `assistant` or `system`",
        ),
        (
            r#"{"model": "m", "messages": [{"role": "user", "content": [{"type": "text"}]}]}"#,
            "invalid value at `$.messages[0].content[0]`: missing required field `text`",
        ),
        (
            r#"{"model": "m", "messages": [{"role": "user", "content": [{"text": "x"}]}]}"#,
            "invalid value at `$.messages[0].content[0]`: missing required field `type`",
        ),
        (
            r#"{"model": "m", "messages": [{"role": "user", "content": 7}]}"#,
            "invalid value at `$.messages[0].content`: expected a string or an array of content blocks, found a number",
        ),
        (
            r#"{"model": "m", "messages": [], "stream": "yes"}"#,
            "invalid value at `$.stream`: expected true or false, found a string",
        ),
        (
            r#"[1, 2]"#,
            "invalid value at `$`: expected an object, found an array",
        ),
    ];
    for (body, expected) in cases {
        assert_eq!(decode(body).unwrap_err().to_string(), expected, "{body}");
    }
}

#[test]
fn invalid_utf8_is_a_syntax_error() {
    let mut body = br#"{"model": "m", "messages": [{"role": "user", "content": ""#.to_vec();
    body.extend_from_slice(&[0xff, 0xfe]);
    body.extend_from_slice(br#""}]}"#);
    let error = MessagesRequest::decode(&body, 1 << 20).unwrap_err();
    assert!(
        matches!(error, WireError::Syntax { line: 1, .. }),
        "{error}"
    );
}

#[test]
fn absurd_nesting_is_refused() {
    let deep = format!(
        r#"{{"model": "m", "messages": [], "metadata": {}{}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let error = decode(&deep).unwrap_err();
    assert!(
        error.to_string().contains("recursion limit exceeded"),
        "{error}"
    );
}

#[test]
fn oversized_bodies_are_not_parsed() {
    let error = MessagesRequest::decode(&vec![b' '; 2048], 1024).unwrap_err();
    assert_eq!(
        error,
        WireError::TooLarge {
            size: 2048,
            limit: 1024
        }
    );
}

#[test]
fn a_null_optional_field_survives() {
    let body = r#"{"model":"m","messages":[],"system":null,"stream":null}"#;
    let request = decode(body).unwrap();
    assert_eq!(request.system, None);
    assert_eq!(request.encode(), body.as_bytes());
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = MessagesRequest::decode(&bytes, 1 << 20);
        let _ = StreamEvent::decode(&bytes, 1 << 20);
    }

    #[test]
    fn arbitrary_json_never_panics(text in r#"[\[\]{}":,a-z0-9 ]{0,64}"#) {
        let body = format!(r#"{{"model":"m","messages":[{{"role":"user","content":[{text}]}}]}}"#);
        let _ = decode(&body);
    }
}
