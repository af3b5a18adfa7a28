//! A context overflow refused inside a `200` stream, caught before the client sees it.
//!
//! Some Responses backends do not refuse an over-long prompt with HTTP 400: they open the
//! stream (`response.created`, `response.in_progress`) and then send `response.failed` whose
//! error is `context_length_exceeded`. Forwarded as it came, that failure would reach the
//! client although the proxy can fix it the way it fixes a 400: retry once, smaller, with the
//! provider's count. So the leading lifecycle events are held back until the first event
//! that says more: an overflow there means nothing was forwarded and the call can be retried;
//! anything else (the first output, or any other failure) releases what was held, in order
//! and byte for byte, and the rest streams through untouched. An overflow after output has
//! reached the client is passed through faithfully: the client already holds part of an
//! answer, which a retry would contradict.
//!
//! The lifecycle events carry no output, so holding them costs the client nothing it could
//! use; the hold is bounded by [`MAX_HELD_BYTES`] so a stream that never says more is not
//! buffered without end.

use bytes::Bytes;
use futures_util::{StreamExt, stream};
use mc_wire::sse::SseDecoder;
use serde_json::Value;

use crate::overflow::{Overflow, parse_stream_overflow};

/// The most bytes of lifecycle events held back before the stream is released anyway.
const MAX_HELD_BYTES: usize = 256 * 1024;

/// What the start of a streamed response showed.
pub enum Peeked {
    /// The stream was refused as a context overflow before any output; nothing of it has been
    /// forwarded. `error` is the failure's error object as an HTTP error body
    /// (`{"error": …}`), for the ledger.
    Overflow {
        /// What the failure proved.
        overflow: Overflow,
        /// `{"error": <the failure's error object>}`.
        error: Bytes,
    },
    /// Anything else: the response to forward, the bytes read so far put back in front.
    Stream(reqwest::Response),
}

/// How one leading event reads.
enum Lead {
    /// A lifecycle event with no output: keep holding.
    Lifecycle,
    /// A context overflow, with its error object.
    Overflow(Overflow, Value),
    /// Anything else: release the stream.
    Other,
}

/// Reads the start of a streamed Responses answer (see the module docs).
pub async fn peek(response: reqwest::Response) -> Peeked {
    let status = response.status();
    let headers = response.headers().clone();
    let mut body = response.bytes_stream();
    let mut decoder = SseDecoder::with_max_event_bytes(MAX_HELD_BYTES);
    let mut held: Vec<Result<Bytes, reqwest::Error>> = Vec::new();
    let mut held_bytes = 0;
    while let Some(chunk) = body.next().await {
        let bytes = match chunk {
            Ok(bytes) => bytes,
            Err(error) => {
                held.push(Err(error));
                break;
            }
        };
        held_bytes += bytes.len();
        let events = decoder.push(&bytes);
        held.push(Ok(bytes));
        let Ok(events) = events else {
            break;
        };
        // Only the events before the first that says more count: an overflow after output
        // in the same chunk is the client's to see.
        let mut release = held_bytes > MAX_HELD_BYTES;
        for event in events {
            match read_lead(&event.data) {
                Lead::Lifecycle => {}
                Lead::Overflow(overflow, error) => {
                    let error = serde_json::json!({ "error": error }).to_string();
                    return Peeked::Overflow {
                        overflow,
                        error: Bytes::from(error),
                    };
                }
                Lead::Other => {
                    release = true;
                    break;
                }
            }
        }
        if release {
            break;
        }
    }
    let body = stream::iter(held).chain(body);
    let mut rebuilt = axum::http::Response::new(reqwest::Body::wrap_stream(body));
    *rebuilt.status_mut() = status;
    *rebuilt.headers_mut() = headers;
    Peeked::Stream(reqwest::Response::from(rebuilt))
}

fn read_lead(data: &str) -> Lead {
    let Ok(event) = serde_json::from_str::<Value>(data) else {
        return Lead::Other;
    };
    let kind = event.get("type").and_then(Value::as_str);
    if matches!(
        kind,
        Some("response.created" | "response.in_progress" | "response.queued")
    ) {
        return Lead::Lifecycle;
    }
    match parse_stream_overflow(&event) {
        Some(overflow) => {
            let error = match kind {
                Some("error") => event,
                _ => event
                    .get("response")
                    .and_then(|response| response.get("error"))
                    .cloned()
                    .unwrap_or_default(),
            };
            Lead::Overflow(overflow, error)
        }
        None => Lead::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leads_are_read_by_their_type() {
        assert!(matches!(
            read_lead(r#"{"type":"response.created","response":{}}"#),
            Lead::Lifecycle
        ));
        assert!(matches!(
            read_lead(r#"{"type":"response.output_text.delta","delta":"hi"}"#),
            Lead::Other
        ));
        assert!(matches!(read_lead("[DONE]"), Lead::Other));
        let failed = r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"context_length_exceeded","message":"This model's maximum context length is 100 tokens. However, your messages resulted in 120 tokens."}}}"#;
        let Lead::Overflow(overflow, error) = read_lead(failed) else {
            panic!("not an overflow");
        };
        assert_eq!(
            (overflow.prompt_tokens, overflow.limit_tokens),
            (Some(120), Some(100))
        );
        assert_eq!(error["code"], "context_length_exceeded");
    }
}
