//! Context-overflow errors, as each provider words them.
//!
//! The provider is the only authority on its window; when it refuses a prompt as too long
//! it states the limit, which the engine stores as the proven window so later plans fold
//! before reaching it.

use serde_json::Value;

/// What an overflow error proved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow {
    /// The prompt's size as the provider counted it, when stated.
    pub prompt_tokens: Option<u64>,
    /// The model's limit, when stated.
    pub limit_tokens: Option<u64>,
    /// The `max_tokens` the request asked for, when the provider counted it against the
    /// window (Anthropic refuses input + `max_tokens` over the window).
    pub max_tokens: Option<u64>,
}

/// The overflow an error body reports, if it is one.
///
/// Anthropic: `400 invalid_request_error` "prompt is too long: 215000 tokens > 200000
/// maximum", or "input length and `max_tokens` exceed context limit: 178959 + 64000 >
/// 200000" (the answer's room counts against the window). OpenAI: `code: context_length_exceeded`, "This model's maximum context length
/// is 128000 tokens. However, your messages resulted in 130000 tokens…".
pub fn parse_overflow(status: u16, body: &[u8]) -> Option<Overflow> {
    if status != 400 && status != 413 {
        return None;
    }
    let value: Value = serde_json::from_slice(body).ok()?;
    overflow_in(value.get("error")?)
}

/// The overflow a streamed Responses event reports, if it is one: `response.failed` whose
/// response's `error` is a context overflow (`code: context_length_exceeded`), or an `error`
/// event saying the same. Worded as the HTTP error is, so the same figures are read.
pub(crate) fn parse_stream_overflow(event: &Value) -> Option<Overflow> {
    match event.get("type").and_then(Value::as_str)? {
        "response.failed" => overflow_in(event.get("response")?.get("error")?),
        "error" => overflow_in(event),
        _ => None,
    }
}

/// The overflow an error object (`{message, code, …}`) reports, if it is one.
fn overflow_in(error: &Value) -> Option<Overflow> {
    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
    let lower = message.to_ascii_lowercase();
    if let Some(rest) = lower.split("prompt is too long:").nth(1) {
        let numbers = numbers_in(rest);
        return Some(Overflow {
            prompt_tokens: numbers.first().copied(),
            limit_tokens: numbers.get(1).copied(),
            max_tokens: None,
        });
    }
    if let Some(rest) = lower.split("exceed context limit:").nth(1) {
        let numbers = numbers_in(rest);
        return Some(Overflow {
            prompt_tokens: numbers.first().copied(),
            limit_tokens: numbers.get(2).copied(),
            max_tokens: numbers.get(1).copied(),
        });
    }
    // llama.cpp's server: "request (4476 tokens) exceeds the available context size (4096
    // tokens)", with both figures as fields too.
    if error.get("type").and_then(Value::as_str) == Some("exceed_context_size_error")
        || lower.contains("exceeds the available context size")
    {
        let numbers = numbers_in(&lower);
        let field = |name: &str| error.get(name).and_then(Value::as_u64);
        return Some(Overflow {
            prompt_tokens: field("n_prompt_tokens").or(numbers.first().copied()),
            limit_tokens: field("n_ctx").or(numbers.get(1).copied()),
            max_tokens: None,
        });
    }
    let code = error.get("code").and_then(Value::as_str);
    if code == Some("context_length_exceeded")
        || lower.contains("maximum context length")
        || WINDOW_EXCEEDED.iter().any(|phrase| lower.contains(phrase))
    {
        let limit = lower
            .split("maximum context length is")
            .nth(1)
            .and_then(|rest| numbers_in(rest).first().copied());
        let prompt = lower
            .split("resulted in")
            .nth(1)
            .and_then(|rest| numbers_in(rest).first().copied());
        return Some(Overflow {
            prompt_tokens: prompt,
            limit_tokens: limit,
            max_tokens: None,
        });
    }
    None
}

/// How servers that state no figures say a request is over the window (lowercase). Only
/// phrases about the context itself: a rate limit's "too many tokens" is not one.
const WINDOW_EXCEEDED: [&str; 5] = [
    "context length exceeded",
    "exceeds the context window",
    "exceeds the context length",
    "context window exceeded",
    "exceeds the model's context",
];

/// The unsigned integers in `text`, in order (digit groups separated by commas count as one).
fn numbers_in(text: &str) -> Vec<u64> {
    let mut numbers = Vec::new();
    let mut current: Option<u64> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if let Some(digit) = c.to_digit(10) {
            current = Some(
                current
                    .unwrap_or(0)
                    .saturating_mul(10)
                    .saturating_add(u64::from(digit)),
            );
        } else if c == ',' && current.is_some() && chars.peek().is_some_and(char::is_ascii_digit) {
            continue;
        } else if let Some(number) = current.take() {
            numbers.push(number);
        }
    }
    numbers.extend(current);
    numbers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_overflow() {
        let body = br#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215000 tokens > 200000 maximum"}}"#;
        assert_eq!(
            parse_overflow(400, body),
            Some(Overflow {
                prompt_tokens: Some(215_000),
                limit_tokens: Some(200_000),
                max_tokens: None,
            })
        );
    }

    #[test]
    fn anthropic_input_plus_max_tokens_overflow() {
        let body = br#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000, decrease input length or `max_tokens` and try again"}}"#;
        assert_eq!(
            parse_overflow(400, body),
            Some(Overflow {
                prompt_tokens: Some(178_959),
                limit_tokens: Some(200_000),
                max_tokens: Some(64_000),
            })
        );
    }

    #[test]
    fn openai_overflow() {
        let body = br#"{"error":{"message":"This model's maximum context length is 128,000 tokens. However, your messages resulted in 130,512 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        assert_eq!(
            parse_overflow(400, body),
            Some(Overflow {
                prompt_tokens: Some(130_512),
                limit_tokens: Some(128_000),
                max_tokens: None,
            })
        );
    }

    #[test]
    fn a_streamed_responses_overflow() {
        let failed = serde_json::json!({"type": "response.failed", "sequence_number": 2, "response": {
            "status": "failed",
            "error": {"code": "context_length_exceeded", "message": "This model's maximum context length is 20000 tokens. However, your messages resulted in 23456 tokens."}}});
        let expected = Some(Overflow {
            prompt_tokens: Some(23_456),
            limit_tokens: Some(20_000),
            max_tokens: None,
        });
        assert_eq!(parse_stream_overflow(&failed), expected);
        let bare = serde_json::json!({"type": "error", "code": "context_length_exceeded",
            "message": "Your input exceeds the context window of this model."});
        assert_eq!(
            parse_stream_overflow(&bare),
            Some(Overflow {
                prompt_tokens: None,
                limit_tokens: None,
                max_tokens: None
            })
        );
        let other = serde_json::json!({"type": "response.failed", "response": {
            "status": "failed", "error": {"code": "server_error", "message": "boom"}}});
        assert_eq!(parse_stream_overflow(&other), None);
        let text = serde_json::json!({"type": "response.output_text.delta", "delta": "maximum context length"});
        assert_eq!(parse_stream_overflow(&text), None);
    }

    #[test]
    fn llama_cpp_overflow() {
        let body = br#"{"error":{"code":400,"message":"request (4476 tokens) exceeds the available context size (4096 tokens)","type":"exceed_context_size_error","n_prompt_tokens":4476,"n_ctx":4096}}"#;
        let expected = Some(Overflow {
            prompt_tokens: Some(4_476),
            limit_tokens: Some(4_096),
            max_tokens: None,
        });
        assert_eq!(parse_overflow(400, body), expected);
        let words_only = br#"{"error":{"code":400,"message":"request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it"}}"#;
        assert_eq!(parse_overflow(400, words_only), expected);
    }

    #[test]
    fn an_overflow_without_figures_is_still_one() {
        let body = br#"{"error":{"message":"Input context length exceeded for this model.","type":"invalid_request_error"}}"#;
        assert_eq!(
            parse_overflow(400, body),
            Some(Overflow {
                prompt_tokens: None,
                limit_tokens: None,
                max_tokens: None,
            })
        );
        let rate = br#"{"error":{"message":"Request too large: too many tokens per minute.","type":"tokens"}}"#;
        assert_eq!(parse_overflow(400, rate), None);
    }

    #[test]
    fn other_errors_are_not_overflows() {
        let body = br#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: must be positive"}}"#;
        assert_eq!(parse_overflow(400, body), None);
        assert_eq!(parse_overflow(500, b"not json"), None);
        assert_eq!(parse_overflow(400, b"not json"), None);
    }
}
