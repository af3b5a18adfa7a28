//! Hiding the usage chunk the proxy asked for from an OpenAI client that did not.
//!
//! OpenAI streams carry token counts only when the request sets
//! `stream_options.include_usage`, and the engine plans better on reported usage than on
//! estimates. So the proxy asks for it upstream and, for a client that did not ask, undoes
//! what asking changed: the one extra event (a chunk with empty `choices` and a `usage`
//! object) is removed, and the `"usage":null` that OpenAI then appends to every other chunk
//! is cut where it ends the chunk's object. The client receives the stream it would have
//! received without the proxy; an event is held back only until its blank-line terminator
//! arrives.

use bytes::{Bytes, BytesMut};

use crate::sse_frame::event_end;

/// Removes usage-only events from an SSE byte stream.
#[derive(Debug, Default)]
pub struct UsageChunkFilter {
    pending: BytesMut,
}

impl UsageChunkFilter {
    /// The bytes of `chunk` (and of earlier held-back bytes) that may go to the client now.
    pub fn push(&mut self, chunk: &[u8]) -> Bytes {
        self.pending.extend_from_slice(chunk);
        let mut out = BytesMut::with_capacity(self.pending.len());
        while let Some(end) = event_end(&self.pending) {
            let event = self.pending.split_to(end);
            if !is_usage_only(&event) {
                out.extend_from_slice(&without_null_usage(&event));
            }
        }
        out.freeze()
    }

    /// Whatever is still held back when the stream ends (an unterminated last event).
    pub fn finish(self) -> Bytes {
        self.pending.freeze()
    }
}

/// The suffix `include_usage` adds to every other chunk's object.
const NULL_USAGE: &[u8] = b",\"usage\":null}";

/// `event` with `,"usage":null` removed from the end of each data line's object; other
/// events unchanged.
fn without_null_usage(event: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(event.len());
    let mut rest = event;
    while !rest.is_empty() {
        let line_len = rest
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
            .unwrap_or(rest.len());
        let (line, after) = rest.split_at(line_len);
        match line.strip_suffix(NULL_USAGE) {
            Some(kept) if line.starts_with(b"data:") => {
                out.extend_from_slice(kept);
                out.push(b'}');
            }
            _ => out.extend_from_slice(line),
        }
        let ending = after
            .iter()
            .take_while(|&&b| b == b'\n' || b == b'\r')
            .count();
        out.extend_from_slice(&after[..ending]);
        rest = &after[ending..];
    }
    out
}

/// Whether an event's data is a chunk with no choices and a usage object.
fn is_usage_only(event: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(event) else {
        return false;
    };
    if !text.contains("\"usage\"") {
        return false;
    }
    let data: String = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| data.strip_prefix(' ').unwrap_or(data))
        .collect::<Vec<_>>()
        .join("\n");
    let Ok(value) = serde_json::from_str::<serde_json::Value>(&data) else {
        return false;
    };
    value
        .get("choices")
        .and_then(serde_json::Value::as_array)
        .is_some_and(Vec::is_empty)
        && value.get("usage").is_some_and(serde_json::Value::is_object)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = concat!(
        "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}],\"usage\":null}\n\n",
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2}}\n\n",
        "data: [DONE]\n\n",
    );

    /// What the upstream sends without `include_usage`.
    const WITHOUT: &str = concat!(
        "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    );

    #[test]
    fn the_stream_is_what_it_would_be_without_usage_whatever_the_chunking() {
        let expected = WITHOUT;
        for size in [1, 2, 3, 7, 64, STREAM.len()] {
            let mut filter = UsageChunkFilter::default();
            let mut out = Vec::new();
            for chunk in STREAM.as_bytes().chunks(size) {
                out.extend_from_slice(&filter.push(chunk));
            }
            out.extend_from_slice(&filter.finish());
            assert_eq!(
                String::from_utf8(out).unwrap(),
                expected,
                "chunks of {size}"
            );
        }
    }

    #[test]
    fn crlf_framing_and_the_word_usage_in_content_are_kept() {
        let stream = "data: {\"choices\":[{\"delta\":{\"content\":\"\\\"usage\\\":null}\"}}],\"usage\":null}\r\n\r\ndata: [DONE]\r\n\r\n";
        let expected = "data: {\"choices\":[{\"delta\":{\"content\":\"\\\"usage\\\":null}\"}}]}\r\n\r\ndata: [DONE]\r\n\r\n";
        let mut filter = UsageChunkFilter::default();
        let mut out = filter.push(stream.as_bytes()).to_vec();
        out.extend_from_slice(&filter.finish());
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }
}
