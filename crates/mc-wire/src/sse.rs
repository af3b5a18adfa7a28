//! Byte-level Server-Sent Events framing (WHATWG `text/event-stream`).
//!
//! The proxy forwards provider streams (Anthropic Messages, OpenAI Chat Completions) byte for
//! byte and parses a tee'd copy with [`SseDecoder`] to learn usage and stop reasons; tests and
//! simulators read and write recorded streams with the same decoder and [`encode_event`].
//! Because parsing a copy must never disturb the forwarded stream, the decoder is a sync state
//! machine that accepts chunks cut anywhere (mid-line, mid-`"\r\n"`, mid-UTF-8 character),
//! never panics on hostile bytes, and holds at most one bounded line plus one bounded event.
//!
//! It deliberately differs from a browser `EventSource` in two places, both so the proxy can
//! tell a healthy stream from a broken one instead of silently papering over it:
//! - invalid UTF-8 is an error ([`SseError::InvalidUtf8`]) rather than replaced by U+FFFD;
//! - a stream that ends inside an event is an error ([`SseError::Truncated`]) where the spec
//!   quietly discards the unterminated event.
//!
//! ```
//! # use mc_wire::sse;
//! # fn main() -> Result<(), sse::SseError> {
//! let mut decoder = sse::SseDecoder::new();
//! let mut events = decoder.push(b"event: ping\ndata: {\"type\"")?;
//! assert!(events.is_empty()); // the event is not finished yet
//! events = decoder.push(b": \"ping\"}\n\n")?;
//! assert_eq!(events[0].event.as_deref(), Some("ping"));
//! assert_eq!(events[0].data, "{\"type\": \"ping\"}");
//! decoder.finish()?; // Ok: the stream ended on an event boundary
//! # Ok(())
//! # }
//! ```

use std::mem;

/// Default for [`SseDecoder::with_max_event_bytes`]: 16 MiB.
///
/// Far above any real provider event (a large tool-call argument delta is kilobytes), yet it
/// caps what a misbehaving upstream can make the proxy buffer per stream.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// The UTF-8 byte order mark the spec strips once at the very start of a stream.
const BOM: &[u8; 3] = b"\xEF\xBB\xBF";

/// One dispatched event.
///
/// `id` and `retry` are the values seen inside this event only. The spec's persistent
/// "last event ID" and reconnection time are not modelled: the proxy never reconnects, and a
/// per-event view keeps the decoded stream a faithful picture of the bytes on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, `None` when the event had none (a client would call it `message`).
    /// `Some("")` when the field was present but empty, so re-encoding is faithful.
    pub event: Option<String>,
    /// All `data:` lines of the event joined with `'\n'`.
    pub data: String,
    /// The last `id:` field of the event; ids containing NUL are ignored, as the spec says.
    pub id: Option<String>,
    /// The last valid `retry:` field of the event, in milliseconds.
    pub retry: Option<u64>,
    /// Stream byte offset of the event's first field line (after any comments), so errors and
    /// logs about a recorded stream can point at the bytes.
    pub offset: u64,
}

/// Why a stream could not be decoded. Every variant carries the stream byte offset it concerns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// A line was not valid UTF-8; `offset` is the first byte that is not.
    #[error(
        "SSE stream has invalid UTF-8 at byte {offset}; the upstream sent something other than \
         text/event-stream"
    )]
    InvalidUtf8 {
        /// Stream byte offset of the first invalid byte.
        offset: u64,
    },
    /// A single line, or the fields buffered for one event, grew past the configured limit.
    #[error(
        "SSE line or event starting at byte {offset} exceeds the {limit}-byte limit; raise the \
         limit if the upstream is trusted, otherwise drop the stream"
    )]
    EventTooLarge {
        /// The configured limit in bytes.
        limit: usize,
        /// Stream byte offset where the oversized line or event began.
        offset: u64,
    },
    /// The stream ended mid-line or after fields that no blank line dispatched.
    #[error(
        "SSE stream ended inside an event: {pending_bytes} bytes from byte {offset} were never \
         terminated by a blank line; the upstream connection was probably cut"
    )]
    Truncated {
        /// How many bytes of the unfinished event (or line) were pending at the end.
        pending_bytes: u64,
        /// Stream byte offset where the unfinished event (or line) began.
        offset: u64,
    },
}

/// Incremental decoder for one `text/event-stream`.
///
/// Feed chunks as they arrive with [`push`](Self::push) or [`push_into`](Self::push_into),
/// then call [`finish`](Self::finish) at end of stream. Each input byte is scanned once: only
/// the unterminated tail of a chunk is copied (into a reused line buffer), complete lines are
/// parsed straight from the caller's slice, so decoding is amortised O(n).
///
/// After an error the decoder is poisoned: every later `push`/`finish` returns the same error,
/// because the byte offsets after a skipped line would no longer describe one consistent stream.
#[derive(Debug)]
pub struct SseDecoder {
    /// Limit for one line and for one event's buffered fields.
    max_event_bytes: usize,
    /// How far we are through the optional leading BOM.
    bom: BomState,
    /// The bytes of the current line seen so far; never contains a line terminator.
    partial: Vec<u8>,
    /// Stream byte offset of the first byte of `partial` (the start of the current line).
    line_start: u64,
    /// The previous line ended in `'\r'` at a chunk end; a leading `'\n'` completes that CRLF.
    skip_lf: bool,
    /// Fields of the event being assembled.
    pending: PendingEvent,
    /// The first error, returned again for any further input.
    failed: Option<SseError>,
}

/// Whether the stream-start BOM has been matched, and how far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BomState {
    /// This many leading bytes equal the BOM's prefix; more input decides.
    Matching(usize),
    /// The stream start is settled (BOM stripped or absent).
    Done,
}

/// Field buffers of the event under construction, as the spec's "buffers".
#[derive(Debug, Default)]
struct PendingEvent {
    /// Offset of the first field line; `None` while only comments/blank lines were seen.
    start: Option<u64>,
    event: Option<String>,
    /// Each data line followed by `'\n'`, so `"data:"` alone gives a non-empty buffer and the
    /// event is dispatched with empty data, as the spec requires.
    data: String,
    id: Option<String>,
    retry: Option<u64>,
}

impl PendingEvent {
    /// Bytes held for this event, checked against the limit after every field.
    fn buffered_bytes(&self) -> usize {
        self.data.len()
            + self.event.as_ref().map_or(0, String::len)
            + self.id.as_ref().map_or(0, String::len)
    }
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SseDecoder {
    /// A decoder with the [`DEFAULT_MAX_EVENT_BYTES`] limit.
    pub fn new() -> Self {
        Self::with_max_event_bytes(DEFAULT_MAX_EVENT_BYTES)
    }

    /// A decoder whose memory is bounded by `max_event_bytes`: any single line (comments
    /// included), and the `event`/`data`/`id` bytes buffered for one event, may not exceed it.
    /// Exceeding it yields [`SseError::EventTooLarge`] before the excess is copied.
    pub fn with_max_event_bytes(max_event_bytes: usize) -> Self {
        Self {
            max_event_bytes,
            bom: BomState::Matching(0),
            partial: Vec::new(),
            line_start: 0,
            skip_lf: false,
            pending: PendingEvent::default(),
            failed: None,
        }
    }

    /// Decodes `chunk` and returns the events it completed (often none).
    ///
    /// Convenience over [`push_into`](Self::push_into); an empty `Vec` does not allocate. On
    /// error, events completed earlier in the same chunk are dropped with the stream; use
    /// `push_into` when those still matter (e.g. to account usage of a stream that broke).
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut events = Vec::new();
        self.push_into(chunk, &mut events)?;
        Ok(events)
    }

    /// Decodes `chunk`, appending completed events to `out`.
    ///
    /// Lets a hot loop reuse one `Vec` across chunks, and keeps in `out` every event completed
    /// before an error in this chunk. After an error, returns that same error without reading.
    pub fn push_into(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        let result = self.strip_bom_then_feed(chunk, out);
        if let Err(err) = &result {
            self.failed = Some(err.clone());
        }
        result
    }

    /// Ends the stream.
    ///
    /// Returns no event: a well-formed stream dispatches its last event on the blank line that
    /// ends it, during `push`. Anything still pending (a partial line, or fields without their
    /// blank line) is reported as [`SseError::Truncated`] so a cut stream is not mistaken for a
    /// complete one. A trailing comment line or blank lines are a clean end.
    pub fn finish(self) -> Result<(), SseError> {
        if let Some(err) = self.failed {
            return Err(err);
        }
        // A stream of only a BOM prefix ("\xEF\xBB") ends inside its first line.
        let held_bom = match self.bom {
            BomState::Matching(matched) => matched,
            BomState::Done => 0,
        };
        let partial_len = len_u64(self.partial.len() + held_bom);
        if partial_len == 0 && self.pending.start.is_none() {
            return Ok(());
        }
        let offset = self.pending.start.unwrap_or(self.line_start);
        let end = self.line_start + partial_len;
        Err(SseError::Truncated {
            pending_bytes: end - offset,
            offset,
        })
    }

    /// Matches the optional BOM byte by byte (it may be split across chunks), then feeds the
    /// rest. Bytes that turn out not to be a BOM are fed as ordinary input.
    fn strip_bom_then_feed(
        &mut self,
        mut chunk: &[u8],
        out: &mut Vec<SseEvent>,
    ) -> Result<(), SseError> {
        while let BomState::Matching(matched) = self.bom {
            let Some((&byte, rest)) = chunk.split_first() else {
                return Ok(());
            };
            if BOM.get(matched) == Some(&byte) {
                chunk = rest;
                if matched + 1 == BOM.len() {
                    self.bom = BomState::Done;
                    self.line_start = len_u64(BOM.len());
                } else {
                    self.bom = BomState::Matching(matched + 1);
                }
            } else {
                self.bom = BomState::Done;
                self.feed(BOM.get(..matched).unwrap_or_default(), out)?;
            }
        }
        self.feed(chunk, out)
    }

    /// Splits `input` into lines, parsing complete ones in place and keeping the tail.
    fn feed(&mut self, mut input: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if self.skip_lf {
            match input.split_first() {
                None => return Ok(()),
                Some((&b'\n', rest)) => {
                    self.skip_lf = false;
                    self.line_start += 1;
                    input = rest;
                }
                Some(_) => self.skip_lf = false,
            }
        }
        while let Some(end) = input.iter().position(|&b| b == b'\n' || b == b'\r') {
            let (head, tail) = input.split_at(end);
            let line_len = self.partial.len() + head.len();
            self.check_line_len(line_len)?;
            if self.partial.is_empty() {
                self.parse_line(head, out)?;
            } else {
                // Take the buffer out to parse it while `self` is mutable, then give its
                // capacity back so the next split line does not allocate.
                let mut line = mem::take(&mut self.partial);
                line.extend_from_slice(head);
                let result = self.parse_line(&line, out);
                line.clear();
                self.partial = line;
                result?;
            }
            let terminator_len = match tail {
                [b'\r', b'\n', ..] => 2,
                [b'\r'] => {
                    self.skip_lf = true;
                    1
                }
                _ => 1,
            };
            self.line_start += len_u64(line_len + terminator_len);
            input = tail.get(terminator_len..).unwrap_or_default();
        }
        if !input.is_empty() {
            self.check_line_len(self.partial.len() + input.len())?;
            self.partial.extend_from_slice(input);
        }
        Ok(())
    }

    /// Rejects a line longer than the limit, checked before copying so memory stays bounded.
    fn check_line_len(&self, line_len: usize) -> Result<(), SseError> {
        if line_len > self.max_event_bytes {
            return Err(SseError::EventTooLarge {
                limit: self.max_event_bytes,
                offset: self.line_start,
            });
        }
        Ok(())
    }

    /// Interprets one line (without its terminator) starting at `self.line_start`.
    fn parse_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let line = std::str::from_utf8(line).map_err(|err| SseError::InvalidUtf8 {
            offset: self.line_start + len_u64(err.valid_up_to()),
        })?;
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line.starts_with(':') {
            return Ok(());
        }
        let (name, value) = match line.split_once(':') {
            Some((name, value)) => (name, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        let start = *self.pending.start.get_or_insert(self.line_start);
        match name {
            "event" => self.pending.event = Some(value.to_owned()),
            "data" => {
                self.pending.data.push_str(value);
                self.pending.data.push('\n');
            }
            "id" if !value.contains('\0') => self.pending.id = Some(value.to_owned()),
            "retry" => {
                if let Some(retry_ms) = parse_retry_ms(value) {
                    self.pending.retry = Some(retry_ms);
                }
            }
            // Unknown fields (and NUL-bearing ids) are ignored, as the spec says.
            _ => {}
        }
        if self.pending.buffered_bytes() > self.max_event_bytes {
            return Err(SseError::EventTooLarge {
                limit: self.max_event_bytes,
                offset: start,
            });
        }
        Ok(())
    }

    /// Ends the current event on a blank line; dispatches it only if a `data` field was seen.
    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let pending = mem::take(&mut self.pending);
        let Some(offset) = pending.start else {
            return;
        };
        if pending.data.is_empty() {
            return;
        }
        let mut data = pending.data;
        if data.ends_with('\n') {
            data.pop();
        }
        out.push(SseEvent {
            event: pending.event,
            data,
            id: pending.id,
            retry: pending.retry,
            offset,
        });
    }
}

/// A `retry` value counts only if it is all ASCII digits; one too large for `u64` is ignored
/// like any other invalid value rather than clamped.
fn parse_retry_ms(value: &str) -> Option<u64> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

/// Widens a byte count to a stream offset; `usize` fits in `u64` on every supported target.
fn len_u64(len: usize) -> u64 {
    len as u64
}

/// Encodes one event canonically: `event: NAME\n` (when given), one `data: LINE\n` per line
/// of `data`, then a blank line.
///
/// Simulators and snapshot tests write streams with this so [`SseDecoder`] reads back exactly
/// `(event, data)`. SSE cannot carry a carriage return inside a field, so `data` is split on
/// `"\r\n"`, `"\r"` and `"\n"` alike (the decoder joins with `'\n'`), and CR/LF characters in
/// `event` are dropped rather than allowed to inject extra fields.
pub fn encode_event(event: Option<&str>, data: &str) -> String {
    let mut out = String::with_capacity(data.len() + event.map_or(0, str::len) + 16);
    if let Some(name) = event {
        out.push_str("event: ");
        out.extend(name.chars().filter(|c| !matches!(c, '\r' | '\n')));
        out.push('\n');
    }
    let mut rest = data;
    loop {
        let Some(end) = rest.find(['\r', '\n']) else {
            push_data_line(&mut out, rest);
            break;
        };
        let (line, tail) = rest.split_at(end);
        push_data_line(&mut out, line);
        let terminator_len = if tail.starts_with("\r\n") { 2 } else { 1 };
        rest = tail.get(terminator_len..).unwrap_or_default();
    }
    out.push('\n');
    out
}

/// Appends one `data: LINE\n` field.
fn push_data_line(out: &mut String, line: &str) {
    out.push_str("data: ");
    out.push_str(line);
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Feeds `bytes` cut before each offset in `cuts` (sorted, in range), collecting events
    /// with `push_into` so events before an error are kept, then finishes.
    fn decode_chunked(
        bytes: &[u8],
        cuts: &[usize],
        limit: usize,
    ) -> (Vec<SseEvent>, Result<(), SseError>) {
        let mut decoder = SseDecoder::with_max_event_bytes(limit);
        let mut events = Vec::new();
        let mut from = 0;
        for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
            if let Err(err) = decoder.push_into(&bytes[from..cut], &mut events) {
                return (events, Err(err));
            }
            from = cut;
        }
        (events, decoder.finish())
    }

    fn decode_whole(bytes: &[u8]) -> (Vec<SseEvent>, Result<(), SseError>) {
        decode_chunked(bytes, &[], DEFAULT_MAX_EVENT_BYTES)
    }

    fn decode_bytewise(bytes: &[u8], limit: usize) -> (Vec<SseEvent>, Result<(), SseError>) {
        let cuts: Vec<usize> = (1..bytes.len()).collect();
        decode_chunked(bytes, &cuts, limit)
    }

    /// Decodes a stream that must be clean, returning its events.
    fn decode_ok(bytes: &[u8]) -> Vec<SseEvent> {
        let (events, end) = decode_whole(bytes);
        assert_eq!(end, Ok(()), "stream {:?}", String::from_utf8_lossy(bytes));
        events
    }

    /// Where `needle` starts in `stream`, so expected offsets are not hand-counted.
    fn offset_of(stream: &str, needle: &str) -> u64 {
        len_u64(stream.find(needle).expect("needle is in the stream"))
    }

    fn ev(event: Option<&str>, data: &str, offset: u64) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
            id: None,
            retry: None,
            offset,
        }
    }

    #[test]
    fn spec_multiline_data_is_joined_with_lf() {
        let events = decode_ok(b"data: YHOO\ndata: +2\ndata: 10\n\n");
        assert_eq!(events, vec![ev(None, "YHOO\n+2\n10", 0)]);
    }

    #[test]
    fn spec_comments_ids_and_leading_space() {
        let stream = b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\n\
                       data:  third event\n\n";
        let events = decode_ok(stream);
        assert_eq!(
            events,
            vec![
                SseEvent {
                    id: Some("1".into()),
                    ..ev(None, "first event", 15)
                },
                SseEvent {
                    id: Some(String::new()),
                    ..ev(None, "second event", 40)
                },
                ev(None, " third event", 62),
            ]
        );
    }

    #[test]
    fn spec_field_without_colon_has_empty_value() {
        let (events, end) = decode_whole(b"data\n\ndata\ndata\n\ndata:");
        assert_eq!(events, vec![ev(None, "", 0), ev(None, "\n", 6)]);
        assert_eq!(
            end,
            Err(SseError::Truncated {
                pending_bytes: 5,
                offset: 17
            })
        );
    }

    #[test]
    fn spec_space_after_colon_is_optional() {
        let events = decode_ok(b"data:test\n\ndata: test\n\n");
        assert_eq!(events, vec![ev(None, "test", 0), ev(None, "test", 11)]);
    }

    #[test]
    fn cr_crlf_and_mixed_line_endings() {
        let want = vec![ev(Some("a"), "x\ny", 0)];
        assert_eq!(decode_ok(b"event: a\rdata: x\rdata: y\r\r"), want);
        let crlf = decode_ok(b"event: a\r\ndata: x\r\ndata: y\r\n\r\n");
        assert_eq!(crlf, want);
        assert_eq!(decode_ok(b"event: a\ndata: x\r\ndata: y\r\r\n"), want);
    }

    #[test]
    fn crlf_split_across_chunks_is_one_line_ending() {
        let bytes = b"data: a\r\ndata: b\r\n\r\n";
        for cut in 0..=bytes.len() {
            let (events, end) = decode_chunked(bytes, &[cut], DEFAULT_MAX_EVENT_BYTES);
            assert_eq!(
                (events, end),
                (vec![ev(None, "a\nb", 0)], Ok(())),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn utf8_character_split_across_chunks() {
        let bytes = "data: é∑🙂\n\n".as_bytes();
        for cut in 0..=bytes.len() {
            let (events, end) = decode_chunked(bytes, &[cut], DEFAULT_MAX_EVENT_BYTES);
            assert_eq!(
                (events, end),
                (vec![ev(None, "é∑🙂", 0)], Ok(())),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn bom_is_stripped_once_even_when_split() {
        let bytes = b"\xEF\xBB\xBFdata: x\n\n";
        assert_eq!(
            decode_bytewise(bytes, DEFAULT_MAX_EVENT_BYTES),
            (vec![ev(None, "x", 3)], Ok(()))
        );
        // A second BOM is part of the field name, "\u{feff}data", an unknown field.
        assert_eq!(decode_ok(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n"), vec![]);
        // A lone BOM prefix is a cut first line; a BOM prefix then other bytes is content.
        let end = decode_whole(b"\xEF\xBB").1;
        assert_eq!(
            end,
            Err(SseError::Truncated {
                pending_bytes: 2,
                offset: 0
            })
        );
        let bad = decode_bytewise(b"\xEF\xBBdata: x\n\n", DEFAULT_MAX_EVENT_BYTES).1;
        assert_eq!(bad, Err(SseError::InvalidUtf8 { offset: 0 }));
    }

    #[test]
    fn retry_accepts_digits_only() {
        let stream = b"retry: 1000\ndata: a\n\nretry: 10a0\ndata: b\n\nretry:\ndata: c\n\n\
                       retry: 99999999999999999999999\ndata: d\n\nretry: -5\ndata: e\n\n";
        let events = decode_ok(stream);
        let retries: Vec<Option<u64>> = events.iter().map(|e| e.retry).collect();
        assert_eq!(retries, vec![Some(1000), None, None, None, None]);
    }

    #[test]
    fn events_without_data_are_not_dispatched() {
        let events = decode_ok(b"event: lonely\n\nid: 7\nretry: 5\n\nevent: real\ndata: x\n\n");
        assert_eq!(events, vec![ev(Some("real"), "x", 31)]);
    }

    #[test]
    fn fields_reset_between_events_and_odd_fields_are_ignored() {
        let stream = b"event: a\nid: 1\nfoo: bar\ndata: x\n\ndata: y\nid: a\0b\n\n";
        let events = decode_ok(stream);
        assert_eq!(
            events,
            vec![
                SseEvent {
                    id: Some("1".into()),
                    ..ev(Some("a"), "x", 0)
                },
                ev(None, "y", 33)
            ]
        );
    }

    #[test]
    fn empty_event_name_is_kept_as_some_empty() {
        assert_eq!(
            decode_ok(b"event:\ndata: x\n\n"),
            vec![ev(Some(""), "x", 0)]
        );
    }

    #[test]
    fn anthropic_stream_shape() {
        let stream = concat!(
            "event: message_start\n",
            "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":25}}}\n\n",
            "event: ping\n",
            "data: {\"type\": \"ping\"}\n\n",
            "event: content_block_delta\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hé\"}}\n\n",
            "event: message_stop\n",
            "data: {\"type\":\"message_stop\"}\n\n",
        );
        let events = decode_ok(stream.as_bytes());
        let names: Vec<Option<&str>> = events.iter().map(|e| e.event.as_deref()).collect();
        let want = [
            Some("message_start"),
            Some("ping"),
            Some("content_block_delta"),
            Some("message_stop"),
        ];
        assert_eq!(names, want);
        assert_eq!(
            events[1],
            ev(
                Some("ping"),
                "{\"type\": \"ping\"}",
                offset_of(stream, "event: ping")
            )
        );
        assert_eq!(
            decode_bytewise(stream.as_bytes(), DEFAULT_MAX_EVENT_BYTES),
            (events, Ok(()))
        );
    }

    #[test]
    fn openai_stream_ends_with_done() {
        let stream = concat!(
            "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n",
            ": keep-alive\n\n",
            "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":3}}\n\n",
            "data: [DONE]\n\n",
        );
        let events = decode_ok(stream.as_bytes());
        assert_eq!(events.len(), 3);
        assert!(events.iter().all(|e| e.event.is_none()));
        assert_eq!(
            events[2],
            ev(None, "[DONE]", offset_of(stream, "data: [DONE]"))
        );
    }

    #[test]
    fn truncated_streams_are_errors_and_clean_ends_are_not() {
        let cases: [(&[u8], Result<(), SseError>); 7] = [
            (b"", Ok(())),
            (b": comment\n", Ok(())),
            (b"data: x\n\n\n\r", Ok(())),
            (
                b"data: x\n",
                Err(SseError::Truncated {
                    pending_bytes: 8,
                    offset: 0,
                }),
            ),
            (
                b"data: x\n\ndata: y",
                Err(SseError::Truncated {
                    pending_bytes: 7,
                    offset: 9,
                }),
            ),
            (
                b"event: a\n",
                Err(SseError::Truncated {
                    pending_bytes: 9,
                    offset: 0,
                }),
            ),
            (
                b"data: x\n\n: cut comm",
                Err(SseError::Truncated {
                    pending_bytes: 10,
                    offset: 9,
                }),
            ),
        ];
        for (bytes, want) in cases {
            assert_eq!(
                decode_whole(bytes).1,
                want,
                "stream {:?}",
                String::from_utf8_lossy(bytes)
            );
        }
    }

    #[test]
    fn invalid_utf8_reports_stream_offset_and_poisons() {
        let mut decoder = SseDecoder::new();
        assert_eq!(decoder.push(b"data: ok\n\n"), Ok(vec![ev(None, "ok", 0)]));
        let err = SseError::InvalidUtf8 { offset: 17 };
        assert_eq!(decoder.push(b"data: a\xFF\n\n"), Err(err.clone()));
        assert_eq!(decoder.push(b"data: fine\n\n"), Err(err.clone()));
        assert_eq!(decoder.finish(), Err(err));
        // A multibyte character cut by a line ending is invalid where it starts.
        assert_eq!(
            decode_whole(b"data: \xC3\n\n").1,
            Err(SseError::InvalidUtf8 { offset: 6 })
        );
    }

    #[test]
    fn push_into_keeps_events_completed_before_an_error() {
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        let result = decoder.push_into(b"data: a\n\ndata: \xFF\n\n", &mut events);
        assert_eq!(result, Err(SseError::InvalidUtf8 { offset: 15 }));
        assert_eq!(events, vec![ev(None, "a", 0)]);
    }

    #[test]
    fn oversized_line_fails_before_it_is_buffered() {
        let mut decoder = SseDecoder::with_max_event_bytes(16);
        assert_eq!(
            decoder.push(b"data: ok\n\ndata: 0123"),
            Ok(vec![ev(None, "ok", 0)])
        );
        let err = SseError::EventTooLarge {
            limit: 16,
            offset: 10,
        };
        assert_eq!(decoder.push(b"456789abc"), Err(err.clone()));
        assert!(decoder.partial.len() <= 16);
        assert_eq!(decoder.finish(), Err(err));
        let long_comment = decode_chunked(b":0123456789abcdefg\n", &[], 16).1;
        assert_eq!(
            long_comment,
            Err(SseError::EventTooLarge {
                limit: 16,
                offset: 0
            })
        );
    }

    #[test]
    fn oversized_event_reports_where_it_started() {
        let stream = b": hi\ndata: 0123456\ndata: 0123456\ndata: 0123456\n\n";
        let end = decode_chunked(stream, &[], 20).1;
        assert_eq!(
            end,
            Err(SseError::EventTooLarge {
                limit: 20,
                offset: 5
            })
        );
        assert_eq!(
            decode_chunked(stream, &[], 24),
            (vec![ev(None, "0123456\n0123456\n0123456", 5)], Ok(()))
        );
    }

    #[test]
    fn errors_say_what_and_where() {
        let msg = SseError::InvalidUtf8 { offset: 42 }.to_string();
        assert!(msg.contains("invalid UTF-8") && msg.contains("42"), "{msg}");
        let msg = SseError::EventTooLarge {
            limit: 16,
            offset: 7,
        }
        .to_string();
        assert!(
            msg.contains("16-byte limit") && msg.contains("byte 7"),
            "{msg}"
        );
        let msg = SseError::Truncated {
            pending_bytes: 3,
            offset: 9,
        }
        .to_string();
        assert!(msg.contains("3 bytes from byte 9"), "{msg}");
    }

    #[test]
    fn encode_event_is_canonical() {
        assert_eq!(
            encode_event(Some("ping"), "{}"),
            "event: ping\ndata: {}\n\n"
        );
        assert_eq!(encode_event(None, "a\nb"), "data: a\ndata: b\n\n");
        assert_eq!(encode_event(None, ""), "data: \n\n");
        assert_eq!(
            encode_event(None, "a\r\nb\rc\n"),
            "data: a\ndata: b\ndata: c\ndata: \n\n"
        );
        assert_eq!(encode_event(Some("x\ny"), "d"), "event: xy\ndata: d\n\n");
    }

    #[test]
    fn encode_then_decode_round_trips_edge_data() {
        for data in ["", "\n", " lead", "a:b", "\n\n", "é∑🙂\ntrail "] {
            let events = decode_ok(encode_event(Some(""), data).as_bytes());
            assert_eq!(events, vec![ev(Some(""), data, 0)]);
        }
    }

    /// Random events: names from a small alphabet, data with blank, spaced, colon-bearing
    /// and non-ASCII lines.
    fn arb_events() -> impl Strategy<Value = Vec<(Option<String>, String)>> {
        let name = prop::option::of("[a-z_]{0,12}");
        let line = "[a-z0-9 :{}\"é∑🙂]{0,16}";
        let data = prop::collection::vec(line, 1..4).prop_map(|lines| lines.join("\n"));
        prop::collection::vec((name, data), 0..8)
    }

    /// Rewrites each `'\n'` as `"\n"`, `"\r\n"` or `"\r"` per `styles` (cycled). A bare `"\r"`
    /// followed by `"\n"` would read as one CRLF, so that pair is written as `"\r\r\n"`.
    fn convert_line_endings(text: &str, styles: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len() * 2);
        let mut newline_no = 0;
        for &byte in text.as_bytes() {
            if byte != b'\n' {
                out.push(byte);
                continue;
            }
            let style = styles
                .get(newline_no % styles.len().max(1))
                .copied()
                .unwrap_or(0);
            newline_no += 1;
            let after_bare_cr = out.last() == Some(&b'\r');
            match style {
                1 => out.extend_from_slice(b"\r\n"),
                2 => out.push(b'\r'),
                _ if after_bare_cr => out.extend_from_slice(b"\r\n"),
                _ => out.push(b'\n'),
            }
        }
        out
    }

    fn sorted_cuts(indices: &[prop::sample::Index], len: usize) -> Vec<usize> {
        let mut cuts: Vec<usize> = indices.iter().map(|i| i.index(len + 1)).collect();
        cuts.sort_unstable();
        cuts
    }

    proptest! {
        #[test]
        fn chunking_never_changes_the_decoded_events(
            events in arb_events(),
            styles in prop::collection::vec(0u8..3, 0..16),
            with_bom: bool,
            cut_at in prop::collection::vec(any::<prop::sample::Index>(), 0..24),
        ) {
            let text: String = events.iter().map(|(e, d)| encode_event(e.as_deref(), d)).collect();
            let mut bytes = if with_bom { BOM.to_vec() } else { Vec::new() };
            bytes.extend(convert_line_endings(&text, &styles));

            let (whole, end) = decode_whole(&bytes);
            prop_assert_eq!(end, Ok(()));
            let got: Vec<(Option<String>, String)> =
                whole.iter().map(|e| (e.event.clone(), e.data.clone())).collect();
            prop_assert_eq!(&got, &events);

            let cuts = sorted_cuts(&cut_at, bytes.len());
            let chunked = decode_chunked(&bytes, &cuts, DEFAULT_MAX_EVENT_BYTES);
            prop_assert_eq!(&chunked, &(whole.clone(), Ok(())));
            prop_assert_eq!(decode_bytewise(&bytes, DEFAULT_MAX_EVENT_BYTES), (whole, Ok(())));
        }

        #[test]
        fn garbage_never_panics_and_chunking_is_invisible(
            bytes in prop::collection::vec(
                prop_oneof![
                    any::<u8>(),
                    prop::sample::select(b"data: event:id:retry1\r\n\n:\xEF\xBB\xBF\xC3\xA9".to_vec()),
                ],
                0..400,
            ),
            cut_at in prop::collection::vec(any::<prop::sample::Index>(), 0..24),
            limit in prop_oneof![Just(DEFAULT_MAX_EVENT_BYTES), 0usize..64],
        ) {
            let whole = decode_chunked(&bytes, &[], limit);
            let cuts = sorted_cuts(&cut_at, bytes.len());
            prop_assert_eq!(&decode_chunked(&bytes, &cuts, limit), &whole);
            prop_assert_eq!(&decode_bytewise(&bytes, limit), &whole);
        }
    }
}
