//! Holding back an SSE event until its blank line arrives, so a failure never splices into
//! a half-sent event.
//!
//! When the upstream breaks mid-stream, the tee ends the client's stream with an `error`
//! event. Had the client already received half an event (`data: {"type":"content_blo`), the
//! error event's lines would join that event (SSE only ends an event at a blank line), and
//! the client would read one event of broken JSON instead of the error. So only complete
//! events go to the client; the unterminated tail waits for the bytes that finish it, which
//! providers send in the same or the next chunk.

use bytes::{Bytes, BytesMut};

/// Passes complete SSE events through, holding an unterminated last one.
#[derive(Debug, Default)]
pub struct EventFramer {
    pending: BytesMut,
}

impl EventFramer {
    /// The bytes that may go to the client now: every event `chunk` (after the held bytes)
    /// completes. A chunk of whole events, the usual case, comes back as is, uncopied.
    pub fn push(&mut self, chunk: Bytes) -> Bytes {
        if self.pending.is_empty() {
            let end = complete_len(&chunk);
            self.pending.extend_from_slice(&chunk[end..]);
            return chunk.slice(..end);
        }
        self.pending.extend_from_slice(&chunk);
        let end = complete_len(&self.pending);
        self.pending.split_to(end).freeze()
    }

    /// Whether bytes of an unfinished event are held: a stream ending now ends mid-event.
    pub fn is_mid_event(&self) -> bool {
        !self.pending.is_empty()
    }
}

/// The length of the complete events at the start of `bytes`.
fn complete_len(bytes: &[u8]) -> usize {
    let mut end = 0;
    while let Some(next) = event_end(&bytes[end..]) {
        end += next;
    }
    end
}

/// The end (exclusive) of the first complete event in `bytes`: after its blank line, which
/// SSE allows as `\n\n`, `\r\r` or `\r\n\r\n`.
pub fn event_end(bytes: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < bytes.len() {
        let line_end = match bytes[i] {
            b'\n' => i + 1,
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => i + 2,
            b'\r' => i + 1,
            _ => {
                i += 1;
                continue;
            }
        };
        // A line ended at `line_end`; an empty line right after it ends the event.
        match bytes.get(line_end) {
            Some(b'\n') => return Some(line_end + 1),
            Some(b'\r') if bytes.get(line_end + 1) == Some(&b'\n') => return Some(line_end + 2),
            Some(b'\r') if line_end + 1 < bytes.len() => return Some(line_end + 1),
            // A lone `\r` at the very end may still become `\r\n`: wait for more bytes.
            Some(b'\r') | None => return None,
            Some(_) => i = line_end,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str =
        "event: a\ndata: {\"x\":1}\n\nevent: b\r\ndata: 2\r\n\r\ndata: 3\r\rdata: 4\n\n";

    /// Whatever the chunking, the client gets the same bytes, only ever up to the end of
    /// an event, and a chunk of whole events is not copied.
    #[test]
    fn only_whole_events_pass_whatever_the_chunking() {
        for size in 1..=STREAM.len() {
            let mut framer = EventFramer::default();
            let mut out = Vec::new();
            for chunk in STREAM.as_bytes().chunks(size) {
                let passed = framer.push(Bytes::copy_from_slice(chunk));
                out.extend_from_slice(&passed);
                // Everything passed so far is whole events.
                let next = STREAM.as_bytes()[out.len()..].first();
                assert!(matches!(next, None | Some(b'e' | b'd')), "chunks of {size}");
            }
            assert!(!framer.is_mid_event(), "chunks of {size}");
            assert_eq!(String::from_utf8(out).unwrap(), STREAM, "chunks of {size}");
        }
        let whole = Bytes::from_static(STREAM.as_bytes());
        let passed = EventFramer::default().push(whole.clone());
        assert_eq!(passed.as_ptr(), whole.as_ptr());
    }

    #[test]
    fn a_cut_event_is_held() {
        let mut framer = EventFramer::default();
        let passed = framer.push(Bytes::from_static(
            b"data: 1\n\ndata: {\"type\":\"content_blo",
        ));
        assert_eq!(&passed[..], b"data: 1\n\n");
        assert!(framer.is_mid_event());
    }
}
