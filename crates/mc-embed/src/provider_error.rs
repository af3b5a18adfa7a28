//! Turning a provider's non-success body into a short message that is safe to show and log.

use mc_core::Secret;
use serde::Deserialize;

/// The longest provider message kept, in characters; error bodies can be whole HTML pages.
const MAX_MESSAGE_CHARS: usize = 500;

/// Keys shorter than this are not searched for: no real credential is that short, and
/// blanking every occurrence of a tiny test key would garble the message.
const MIN_REDACTED_KEY_CHARS: usize = 8;

/// `{"error": {"message": ..}}` (OpenAI), `{"error": ".."}` (llama.cpp, Ollama) or
/// `{"message": ..}` / `{"detail": ..}` (other gateways).
#[derive(Deserialize)]
struct ErrorBody {
    error: Option<ErrorField>,
    message: Option<String>,
    detail: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ErrorField {
    Object { message: Option<String> },
    Text(String),
}

/// The provider's message out of `body`, shortened, with `key` and anything key-like redacted.
pub(crate) fn describe(body: &[u8], key: Option<&str>) -> String {
    let parsed = serde_json::from_slice::<ErrorBody>(body).ok();
    let message = parsed
        .and_then(|b| match b.error {
            Some(ErrorField::Object { message: Some(m) }) | Some(ErrorField::Text(m)) => Some(m),
            Some(ErrorField::Object { message: None }) | None => b.message.or_else(|| {
                b.detail.map(|d| match d {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                })
            }),
        })
        .unwrap_or_else(|| raw(body));
    let mut message: String = message.chars().take(MAX_MESSAGE_CHARS).collect();
    if let Some(key) = key.filter(|k| k.chars().count() >= MIN_REDACTED_KEY_CHARS) {
        message = message.replace(key, Secret::REDACTED);
    }
    // Keys the body echoes that are not ours (a gateway quoting its upstream key, a key from
    // another variable) go by their shape.
    mc_core::redact_credentials(&message)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_common_error_shapes() {
        assert_eq!(
            describe(
                br#"{"error":{"message":"model not found","type":"x"}}"#,
                None
            ),
            "model not found"
        );
        assert_eq!(
            describe(br#"{"error":"no such model"}"#, None),
            "no such model"
        );
        assert_eq!(describe(br#"{"message":"slow down"}"#, None), "slow down");
        assert_eq!(describe(br#"{"detail":"bad input"}"#, None), "bad input");
        assert_eq!(describe(b"<html>502</html>", None), "<html>502</html>");
        assert_eq!(describe(b"  ", None), "(empty body)");
    }

    #[test]
    fn redacts_our_key_and_key_like_words() {
        let body = br#"{"error":{"message":"Incorrect API key provided: abcdefgh12. Also sk-proj-AAAABBBBCCCC was seen"}}"#;
        assert_eq!(
            describe(body, Some("abcdefgh12")),
            "Incorrect API key provided: <redacted>. Also <redacted> was seen"
        );
        let token = "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8";
        assert_eq!(
            describe(format!("token {token} rejected").as_bytes(), None),
            "token <redacted> rejected"
        );
        assert_eq!(
            describe(b"model text-embedding-3-small failed", None),
            "model text-embedding-3-small failed"
        );
    }

    #[test]
    fn long_messages_are_cut() {
        let body = "x ".repeat(2000);
        assert_eq!(
            describe(body.as_bytes(), None).chars().count(),
            MAX_MESSAGE_CHARS
        );
    }
}
