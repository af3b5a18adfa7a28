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
mod tests;
