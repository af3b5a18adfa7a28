//! Reading usage and the stop reason off a copy of the response, as it streams past.
//!
//! Only the events that carry them are parsed (Anthropic's `message_start`,
//! `message_delta` and `error`; OpenAI chunks that mention `usage` or a finish reason;
//! Responses' terminal events and `error`), so the tee costs little more than the SSE
//! framing.
//!
//! The observer also notes when the stream has delivered its final event (Anthropic
//! `message_stop`; Chat's usage chunk or `[DONE]`; Responses `response.completed`,
//! `response.incomplete` or `response.failed`): the call is then whole whatever the client
//! does next. Codex closes its stream at `response.completed` without reading to the end of
//! the body; such a call still reports its usage ([`UsageObserver::has_ended`]).

use mc_wire::sse::SseDecoder;
use serde_json::Value;

use crate::provider::Provider;

/// The longest error text a ledger row (and its log line) keeps, in characters.
pub const MAX_ERROR_CHARS: usize = 300;

/// Largest non-streamed response body kept for parsing; bigger ones pass through unread.
const MAX_JSON_BODY_BYTES: usize = 8 * 1024 * 1024;

/// What the response reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallUsage {
    /// Uncached input tokens.
    pub uncached: Option<u64>,
    /// Tokens written to the cache.
    pub cache_write: Option<u64>,
    /// Tokens read from the cache.
    pub cache_read: Option<u64>,
    /// Generated tokens.
    pub output: Option<u64>,
    /// Why generation stopped.
    pub stop_reason: Option<String>,
    /// An error the stream reported, when it did.
    pub stream_error: Option<String>,
}

/// Watches response bytes go by.
pub struct UsageObserver {
    provider: Provider,
    body: Body,
    usage: CallUsage,
    ended: bool,
}

enum Body {
    Stream(SseDecoder),
    Json(Vec<u8>),
    Ignored,
}

impl UsageObserver {
    /// An observer for a response of `provider` with this `content-type`.
    pub fn new(provider: Provider, content_type: Option<&str>) -> Self {
        let body = match content_type {
            Some(kind) if kind.starts_with("text/event-stream") => Body::Stream(SseDecoder::new()),
            Some(kind) if kind.contains("json") => Body::Json(Vec::new()),
            _ => Body::Ignored,
        };
        Self {
            provider,
            body,
            usage: CallUsage::default(),
            ended: false,
        }
    }

    /// Whether the stream has delivered its final event, so the call is complete even if
    /// the client goes away before the body's end.
    pub fn has_ended(&self) -> bool {
        self.ended
    }

    /// Takes in the next chunk of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        match &mut self.body {
            Body::Stream(decoder) => match decoder.push(chunk) {
                Ok(events) => {
                    for event in events {
                        self.ended |= observe_event(
                            self.provider,
                            event.event.as_deref(),
                            &event.data,
                            &mut self.usage,
                        );
                    }
                }
                // A stream we cannot frame is still forwarded; only its usage is lost.
                Err(_) => self.body = Body::Ignored,
            },
            Body::Json(buffer) => {
                if buffer.len() + chunk.len() > MAX_JSON_BODY_BYTES {
                    self.body = Body::Ignored;
                } else {
                    buffer.extend_from_slice(chunk);
                }
            }
            Body::Ignored => {}
        }
    }

    /// What the whole body reported.
    pub fn finish(mut self) -> CallUsage {
        if let Body::Json(buffer) = &self.body
            && let Ok(value) = serde_json::from_slice::<Value>(buffer)
        {
            observe_json(self.provider, &value, &mut self.usage);
        }
        self.usage
    }
}

/// Reads one event into `usage`; says whether it is the stream's final event.
fn observe_event(
    provider: Provider,
    name: Option<&str>,
    data: &str,
    usage: &mut CallUsage,
) -> bool {
    match provider {
        Provider::Anthropic => {
            if name == Some("message_stop") {
                return true;
            }
            if !matches!(name, Some("message_start" | "message_delta" | "error")) {
                return false;
            }
            let Ok(value) = serde_json::from_str::<Value>(data) else {
                return false;
            };
            match name {
                Some("message_start") => {
                    if let Some(reported) = value.get("message").and_then(|m| m.get("usage")) {
                        anthropic_usage(reported, usage);
                    }
                }
                Some("message_delta") => {
                    if let Some(reported) = value.get("usage") {
                        anthropic_usage(reported, usage);
                    }
                    if let Some(reason) =
                        value.pointer("/delta/stop_reason").and_then(Value::as_str)
                    {
                        usage.stop_reason = Some(reason.to_owned());
                    }
                }
                _ => usage.stream_error = error_message(&value),
            }
            false
        }
        Provider::OpenAi => {
            if data.trim() == "[DONE]" {
                return true;
            }
            if !(data.contains("\"usage\"")
                || data.contains("finish_reason\":\"")
                || data.contains("\"error\""))
            {
                return false;
            }
            let Ok(value) = serde_json::from_str::<Value>(data) else {
                return false;
            };
            observe_json(provider, &value, usage);
            // The usage chunk comes last, with no choices; a provider that reports usage on
            // every chunk sends its choices beside it.
            let no_choices = value
                .get("choices")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty);
            no_choices && value.get("usage").is_some_and(Value::is_object)
        }
        Provider::OpenAiResponses => {
            // Lifecycle and item events carry no usage; only the terminal events and
            // `error` matter, and the event name says which one this is.
            let wanted = match name {
                Some(name) => matches!(name, "error") || is_responses_end(name),
                None => data.contains("\"usage\"") || data.contains("\"error\""),
            };
            if !wanted {
                return false;
            }
            let Ok(value) = serde_json::from_str::<Value>(data) else {
                return false;
            };
            observe_responses(&value, usage);
            let kind = name.or_else(|| value.get("type").and_then(Value::as_str));
            kind.is_some_and(is_responses_end)
        }
    }
}

/// Whether a Responses event of this type ends the response.
fn is_responses_end(kind: &str) -> bool {
    matches!(
        kind,
        "response.completed" | "response.incomplete" | "response.failed"
    )
}

/// A Responses body, lifecycle event or `error` event: usage and status from the response
/// (`input_tokens` is the whole prompt, `cached_tokens` the part read from the cache), an
/// error from a failed response or an `error` event.
fn observe_responses(value: &Value, usage: &mut CallUsage) {
    if value.get("type").and_then(Value::as_str) == Some("error") {
        let message = value
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("error");
        usage.stream_error = Some(
            mc_core::redact_credentials(message)
                .chars()
                .take(MAX_ERROR_CHARS)
                .collect(),
        );
        return;
    }
    let response = value.get("response").unwrap_or(value);
    if let Some(message) = error_message(response) {
        usage.stream_error = Some(message);
    }
    if let Some(reported) = response.get("usage").filter(|u| u.is_object()) {
        let input = reported.get("input_tokens").and_then(Value::as_u64);
        let cached = reported
            .pointer("/input_tokens_details/cached_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        usage.cache_read = Some(cached);
        usage.cache_write = Some(0);
        usage.uncached = input.map(|input| input.saturating_sub(cached));
        usage.output = reported.get("output_tokens").and_then(Value::as_u64);
    }
    let incomplete = response
        .pointer("/incomplete_details/reason")
        .and_then(Value::as_str);
    match (response.get("status").and_then(Value::as_str), incomplete) {
        (_, Some(reason)) => usage.stop_reason = Some(reason.to_owned()),
        (Some(status @ ("completed" | "incomplete" | "failed")), None) => {
            usage.stop_reason = Some(status.to_owned());
        }
        _ => {}
    }
}

fn observe_json(provider: Provider, value: &Value, usage: &mut CallUsage) {
    if provider == Provider::OpenAiResponses {
        observe_responses(value, usage);
        return;
    }
    if let Some(message) = error_message(value) {
        usage.stream_error = Some(message);
    }
    match provider {
        Provider::Anthropic => {
            if let Some(reported) = value.get("usage") {
                anthropic_usage(reported, usage);
            }
            if let Some(reason) = value.get("stop_reason").and_then(Value::as_str) {
                usage.stop_reason = Some(reason.to_owned());
            }
        }
        Provider::OpenAi | Provider::OpenAiResponses => {
            if let Some(reported) = value.get("usage").filter(|u| u.is_object()) {
                let prompt = reported.get("prompt_tokens").and_then(Value::as_u64);
                let cached = reported
                    .pointer("/prompt_tokens_details/cached_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                usage.cache_read = Some(cached);
                usage.cache_write = Some(0);
                usage.uncached = prompt.map(|prompt| prompt.saturating_sub(cached));
                usage.output = reported.get("completion_tokens").and_then(Value::as_u64);
            }
            if let Some(reason) = value
                .pointer("/choices/0/finish_reason")
                .and_then(Value::as_str)
            {
                usage.stop_reason = Some(reason.to_owned());
            }
        }
    }
}

fn anthropic_usage(reported: &Value, usage: &mut CallUsage) {
    let field = |name: &str| reported.get(name).and_then(Value::as_u64);
    let updates = [
        (&mut usage.uncached, field("input_tokens")),
        (&mut usage.cache_write, field("cache_creation_input_tokens")),
        (&mut usage.cache_read, field("cache_read_input_tokens")),
        (&mut usage.output, field("output_tokens")),
    ];
    for (ours, theirs) in updates {
        if theirs.is_some() {
            *ours = theirs;
        }
    }
}

fn error_message(value: &Value) -> Option<String> {
    // A Responses object always has `error`, `null` unless it failed.
    let error = value.get("error").filter(|error| !error.is_null())?;
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("error");
    // Redacted before the cut, so a cut never leaves part of a key showing.
    Some(
        mc_core::redact_credentials(message)
            .chars()
            .take(MAX_ERROR_CHARS)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_stream_in_small_chunks() {
        let stream = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":5000,\"output_tokens\":1}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\"}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":42}}\n\n",
        );
        let mut observer = UsageObserver::new(
            Provider::Anthropic,
            Some("text/event-stream; charset=utf-8"),
        );
        for chunk in stream.as_bytes().chunks(7) {
            observer.push(chunk);
        }
        let usage = observer.finish();
        assert_eq!(usage.uncached, Some(12));
        assert_eq!(usage.cache_write, Some(100));
        assert_eq!(usage.cache_read, Some(5000));
        assert_eq!(usage.output, Some(42));
        assert_eq!(usage.stop_reason.as_deref(), Some("tool_use"));
    }

    #[test]
    fn openai_json_and_stream() {
        let mut observer = UsageObserver::new(Provider::OpenAi, Some("application/json"));
        observer.push(br#"{"choices":[{"finish_reason":"stop"}],"usage":{"prompt_tokens":2000,"completion_tokens":9,"prompt_tokens_details":{"cached_tokens":1920}}}"#);
        let usage = observer.finish();
        assert_eq!(
            (usage.uncached, usage.cache_read, usage.output),
            (Some(80), Some(1920), Some(9))
        );
        assert_eq!(usage.stop_reason.as_deref(), Some("stop"));

        let mut observer = UsageObserver::new(Provider::OpenAi, Some("text/event-stream"));
        observer.push(
            b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n",
        );
        observer.push(b"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n");
        let usage = observer.finish();
        assert_eq!((usage.uncached, usage.cache_read), (Some(10), Some(0)));
        assert_eq!(usage.stop_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn responses_json_and_stream() {
        let mut observer = UsageObserver::new(Provider::OpenAiResponses, Some("application/json"));
        observer.push(br#"{"id":"r","status":"completed","error":null,"output":[],"usage":{"input_tokens":3000,"input_tokens_details":{"cached_tokens":2944},"output_tokens":7}}"#);
        let usage = observer.finish();
        assert_eq!(
            (usage.uncached, usage.cache_read, usage.output),
            (Some(56), Some(2944), Some(7))
        );
        assert_eq!(usage.stop_reason.as_deref(), Some("completed"));
        assert_eq!(usage.stream_error, None, "a null error is no error");

        let mut observer = UsageObserver::new(Provider::OpenAiResponses, Some("text/event-stream"));
        let stream = concat!(
            "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"status\":\"in_progress\",\"error\":null,\"usage\":null}}\n\n",
            "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"usage\"}\n\n",
            "event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\",\"error\":null,\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"usage\":{\"input_tokens\":10,\"output_tokens\":2}}}\n\n",
        );
        for chunk in stream.as_bytes().chunks(9) {
            observer.push(chunk);
        }
        let usage = observer.finish();
        assert_eq!(
            (usage.uncached, usage.cache_read, usage.output),
            (Some(10), Some(0), Some(2))
        );
        assert_eq!(usage.stop_reason.as_deref(), Some("max_output_tokens"));
        assert_eq!(usage.stream_error, None);

        let mut observer = UsageObserver::new(Provider::OpenAiResponses, Some("text/event-stream"));
        observer.push(b"event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"context_length_exceeded\",\"message\":\"too long\"}}}\n\n");
        assert_eq!(observer.finish().stream_error.as_deref(), Some("too long"));
        let mut observer = UsageObserver::new(Provider::OpenAiResponses, Some("text/event-stream"));
        observer.push(b"event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"boom\"}\n\n");
        assert_eq!(observer.finish().stream_error.as_deref(), Some("boom"));
    }

    /// Each wire's final event, and only it, ends the stream: Anthropic `message_stop`,
    /// Chat's usage chunk or `[DONE]`, a Responses terminal event.
    #[test]
    fn the_final_event_ends_the_stream() {
        let ends = |provider: Provider, events: &[&str]| -> Vec<bool> {
            let mut observer = UsageObserver::new(provider, Some("text/event-stream"));
            events
                .iter()
                .map(|event| {
                    observer.push(event.as_bytes());
                    observer.has_ended()
                })
                .collect()
        };
        assert_eq!(
            ends(
                Provider::Anthropic,
                &[
                    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n",
                    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
                ]
            ),
            [false, true]
        );
        assert_eq!(
            ends(
                Provider::OpenAi,
                &[
                    "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1}}\n\n",
                    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2}}\n\n",
                ]
            ),
            [false, true],
            "usage beside choices is not the usage chunk"
        );
        assert_eq!(
            ends(
                Provider::OpenAi,
                &[
                    "data: {\"choices\":[],\"usage\":null}\n\n",
                    "data: [DONE]\n\n"
                ]
            ),
            [false, true]
        );
        assert_eq!(
            ends(
                Provider::OpenAiResponses,
                &[
                    "event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\"}\n\n",
                    "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"error\":null}}\n\n",
                ]
            ),
            [false, true]
        );
        assert_eq!(
            ends(
                Provider::OpenAiResponses,
                &[
                    "data: {\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\",\"usage\":{\"input_tokens\":4}}}\n\n"
                ]
            ),
            [true],
            "an unnamed terminal event ends it too"
        );
    }

    #[test]
    fn stream_error_event() {
        let mut observer = UsageObserver::new(Provider::Anthropic, Some("text/event-stream"));
        observer.push(b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n");
        assert_eq!(
            observer.finish().stream_error.as_deref(),
            Some("Overloaded")
        );
    }
}
