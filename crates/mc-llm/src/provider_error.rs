//! Reading a non-success answer into something a person can act on.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde::Deserialize;

/// The longest provider message kept, in characters; error bodies can be whole HTML pages.
const MAX_MESSAGE_CHARS: usize = 500;

/// `{"error": {"type", "message"}}` (Anthropic, OpenAI) or `{"error": "text"}` (some local servers).
#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorField,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ErrorField {
    Object {
        #[serde(rename = "type", default)]
        kind: Option<String>,
        #[serde(default)]
        message: Option<String>,
    },
    Text(String),
}

/// Keys shorter than this are not searched for in messages: blanking every "k" of a test key
/// would garble the message, and no real credential is that short.
const MIN_REDACTED_KEY_CHARS: usize = 8;

/// The provider's error type and message, with the key blanked wherever the body echoes it.
pub(crate) fn describe(body: &[u8], key: Option<&str>) -> (Option<String>, String) {
    let (kind, message) = match serde_json::from_slice::<ErrorBody>(body).map(|b| b.error) {
        Ok(ErrorField::Object {
            kind,
            message: Some(message),
        }) => (kind, message),
        Ok(ErrorField::Object {
            kind,
            message: None,
        }) => (kind, raw(body)),
        Ok(ErrorField::Text(message)) => (None, message),
        Err(_) => (None, raw(body)),
    };
    let mut message: String = message.chars().take(MAX_MESSAGE_CHARS).collect();
    if let Some(key) = key.filter(|k| k.chars().count() >= MIN_REDACTED_KEY_CHARS) {
        message = message.replace(key, mc_core::Secret::REDACTED);
    }
    (kind, message)
}

fn raw(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        "(empty body)".to_owned()
    } else {
        text.to_owned()
    }
}

/// How long the provider asks us to wait: `retry-after-ms` (OpenAI) or `retry-after` in
/// seconds. The HTTP-date form is ignored; the backoff schedule applies then.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let read = |name: &str| -> Option<f64> {
        let value: f64 = headers.get(name)?.to_str().ok()?.trim().parse().ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    read("retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| read("retry-after").map(Duration::from_secs_f64))
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn reads_typed_errors_and_redacts_the_key() {
        let body = br#"{"type":"error","error":{"type":"authentication_error","message":"bad key sk-123456"}}"#;
        assert_eq!(
            describe(body, Some("sk-123456")),
            (
                Some("authentication_error".to_owned()),
                "bad key <redacted>".to_owned()
            )
        );
        assert_eq!(
            describe(br#"{"error":{"message":"bad token"}}"#, Some("k")),
            (None, "bad token".to_owned())
        );
        assert_eq!(
            describe(br#"{"error":"model not found"}"#, None),
            (None, "model not found".to_owned())
        );
        assert_eq!(
            describe(b"<html>502</html>", None),
            (None, "<html>502</html>".to_owned())
        );
        assert_eq!(describe(b"", None), (None, "(empty body)".to_owned()));
    }

    #[test]
    fn retry_after_prefers_milliseconds() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        let mut dated = HeaderMap::new();
        dated.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&dated), None);
    }
}
