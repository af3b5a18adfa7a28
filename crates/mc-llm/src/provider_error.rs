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

/// The provider's error type and message, fit for a log line, an error or the ledger: the
/// key the call sent is blanked wherever the body echoes it, and anything else shaped like a
/// credential too ([`mc_core::redact_credentials`]: a masked key, a bearer token, a URL's
/// query). The proxy reads its upstream's error bodies with this as well.
///
/// The message is cut after redaction, so a cut never leaves half a key showing.
pub fn describe_error_body(body: &[u8], key: Option<&str>) -> (Option<String>, String) {
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
    let mut message = message;
    if let Some(key) = key.filter(|k| k.chars().count() >= MIN_REDACTED_KEY_CHARS) {
        message = message.replace(key, mc_core::Secret::REDACTED);
    }
    let message = mc_core::redact_credentials(&message)
        .chars()
        .take(MAX_MESSAGE_CHARS)
        .collect();
    (kind.map(|kind| mc_core::redact_credentials(&kind)), message)
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
            describe_error_body(body, Some("sk-123456")),
            (
                Some("authentication_error".to_owned()),
                "bad key <redacted>".to_owned()
            )
        );
        assert_eq!(
            describe_error_body(br#"{"error":{"message":"bad token"}}"#, Some("k")),
            (None, "bad token".to_owned())
        );
        assert_eq!(
            describe_error_body(br#"{"error":"model not found"}"#, None),
            (None, "model not found".to_owned())
        );
        assert_eq!(
            describe_error_body(b"<html>502</html>", None),
            (None, "<html>502</html>".to_owned())
        );
        assert_eq!(
            describe_error_body(b"", None),
            (None, "(empty body)".to_owned())
        );
    }

    /// OpenAI's 401 quotes the masked key; the proxy, which does not hold it as a key,
    /// still blanks it, and a body longer than the kept message is cut after redaction.
    #[test]
    fn redacts_key_shapes_it_was_not_told_about() {
        let body = br#"{"error":{"message":"Incorrect API key provided: sk-proj-****************************Wx9Q. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
        assert_eq!(
            describe_error_body(body, None),
            (
                Some("invalid_request_error".to_owned()),
                "Incorrect API key provided: <redacted>. You can find your API key at https://platform.openai.com/account/api-keys.".to_owned()
            )
        );
        let key = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        // Cut first, the key's first 10 characters would end the message.
        let long = format!("{}{key}", "x ".repeat(MAX_MESSAGE_CHARS / 2 - 5));
        let (_, message) = describe_error_body(long.as_bytes(), None);
        assert!(!message.contains(&key[..10]), "{message}");
        assert_eq!(message.chars().count(), MAX_MESSAGE_CHARS);
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
