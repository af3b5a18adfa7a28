//! Where a request body's conversation list and each of its entries lie, found without
//! decoding them (Anthropic's and Chat's `messages`, Responses' `input` items).
//!
//! A first request is scanned whole (a borrowed pass that validates its JSON and locates
//! each message). A follow-up repeats most of a remembered body byte for byte, so it is
//! compared with that body instead (memcmp runs far faster than a JSON scan), and only the
//! messages after the shared bytes are scanned. Bytes equal to a valid body's are only known
//! to be valid as part of that body: the extension reads nothing past the last whole shared
//! message but `, <message>` and the closing `]`, and the caller must prove the bytes after
//! the list before trusting the result.

use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::chunked_body::ChunkedBody;

/// Bytes compared at once while looking for the first difference: large enough for memcmp's
/// speed, small enough that the difference is then found in a short byte loop.
const COMPARE_CHUNK: usize = 4096;

/// A request's message list, located in its body.
#[derive(serde::Deserialize)]
struct Messages<'a> {
    #[serde(borrow)]
    messages: Vec<&'a RawValue>,
}

/// A Responses request's item list, located in its body.
#[derive(serde::Deserialize)]
struct InputItems<'a> {
    #[serde(borrow)]
    input: Vec<&'a RawValue>,
}

/// Where a body's message list and each of its messages lie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// Each message's bytes.
    pub ranges: Vec<Range<usize>>,
    /// The `[` opening the list.
    pub open: usize,
    /// The `]` closing it.
    pub close: usize,
}

impl Split {
    /// Scans the whole body; `None` for invalid JSON, a repeated `messages` key or an empty
    /// list (the full decode then decides).
    pub fn scan(body: &[u8]) -> Option<Self> {
        let raw: Messages<'_> = serde_json::from_slice(body).ok()?;
        Self::locate(body, &raw.messages)
    }

    /// [`Self::scan`] for a Responses body's `input` items; `None` also for an input that is
    /// a bare string.
    pub fn scan_input(body: &[u8]) -> Option<Self> {
        let raw: InputItems<'_> = serde_json::from_slice(body).ok()?;
        Self::locate(body, &raw.input)
    }

    /// The split of a list whose items serde_json borrowed from `body`.
    fn locate(body: &[u8], items: &[&RawValue]) -> Option<Self> {
        let ranges = items
            .iter()
            .map(|item| range_in(body, item.get().as_bytes()))
            .collect::<Option<Vec<_>>>()?;
        let (first, last) = (ranges.first()?.start, ranges.last()?.end);
        let open = body[..first].iter().rposition(|&b| b == b'[')?;
        let close = last + body[last..].iter().position(|&b| b == b']')?;
        Some(Self {
            ranges,
            open,
            close,
        })
    }

    /// How many leading bytes hold the list's first `count` messages (through the last
    /// one's end).
    pub fn bytes_through(&self, count: usize) -> usize {
        count
            .checked_sub(1)
            .and_then(|last| self.ranges.get(last))
            .map_or(0, |range| range.end)
    }

    /// Whether `body`, split as `self`, has the bytes of `other_body`, split as `other`,
    /// outside its list (the same fields around the messages or items).
    pub fn same_outside(
        &self,
        body: &ChunkedBody,
        other: &Split,
        other_body: &ChunkedBody,
    ) -> bool {
        body.range_eq(0..self.open, other_body, 0..other.open)
            && body.range_eq(
                self.close..body.len(),
                other_body,
                other.close..other_body.len(),
            )
    }

    /// Extends a remembered body's split (its messages' `remembered_ranges` and the `open` of
    /// its list) over `body`, whose first `equal` bytes are the remembered body's (its
    /// [`common_prefix_len`] with it, which must cover at least the first message); returns
    /// the split and how many leading messages the two bodies share. The bytes after `close`
    /// are not read: they are the caller's to prove. Only the bytes after the last shared
    /// message are read, in one piece (borrowed when one chunk holds them, as the new part
    /// a walk writes does).
    pub fn extend(
        remembered_ranges: &[Range<usize>],
        open: usize,
        body: &ChunkedBody,
        equal: usize,
    ) -> Option<(Self, usize)> {
        let shared = remembered_ranges.partition_point(|range| range.end <= equal);
        let from = remembered_ranges.get(shared.checked_sub(1)?)?.end;
        let rest = body.get(from..body.len())?;
        let mut ranges = remembered_ranges[..shared].to_vec();
        let mut at = 0;
        let close = loop {
            at = skip_whitespace(&rest, at);
            match rest.get(at)? {
                b']' => break from + at,
                b',' => {
                    let start = skip_whitespace(&rest, at + 1);
                    let mut deserializer = serde_json::Deserializer::from_slice(rest.get(start..)?);
                    let message = <&RawValue>::deserialize(&mut deserializer).ok()?;
                    let range = range_in(&rest, message.get().as_bytes())?;
                    at = range.end;
                    ranges.push(from + range.start..from + range.end);
                }
                _ => return None,
            }
        };
        Some((
            Self {
                ranges,
                open,
                close,
            },
            shared,
        ))
    }
}

/// One list entry's bytes decoded alone by `decode`, as the whole body's decode reads them;
/// `None` for one nested past what the whole decode accepts ([`nests_too_deep`]), or one
/// `decode` refuses: the whole decode then judges the body.
pub fn decode_alone<'a, T, E>(
    bytes: &'a [u8],
    decode: impl FnOnce(&'a [u8]) -> Result<T, E>,
) -> Option<T> {
    if nests_too_deep(bytes) {
        return None;
    }
    decode(bytes).ok()
}

/// Arrays and objects serde_json enters before it refuses a value as nested too deeply.
const JSON_NESTING_LIMIT: usize = 127;

/// Whether a message (valid JSON, as located by a split) nests more arrays and objects than
/// the full decode accepts at its place: decoded on its own, serde_json would count its
/// nesting afresh, but in the body it sits inside the request object and its message list.
/// Such a message is left to the full decode, which refuses the body with its position.
pub fn nests_too_deep(message: &[u8]) -> bool {
    let limit = JSON_NESTING_LIMIT - 2;
    // A message with no more openings than the limit cannot nest past it; counting them is
    // a quick pass (about 2.5 GB/s, against 0.6 GB/s for the walk below), and most stop here.
    let openings = message
        .iter()
        .filter(|&&byte| byte == b'[' || byte == b'{')
        .count();
    if openings <= limit {
        return false;
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &byte in message {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Where `part` (a slice of `body`) lies in `body`.
fn range_in(body: &[u8], part: &[u8]) -> Option<Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= body.len()).then_some(start..end)
}

/// The first position at or after `at` that is not JSON whitespace.
fn skip_whitespace(body: &[u8], at: usize) -> usize {
    at + body
        .get(at..)
        .unwrap_or_default()
        .iter()
        .take_while(|&&b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .count()
}

/// How many leading bytes `a` and `b` share.
pub fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    let len = a.len().min(b.len());
    let mut at = 0;
    while at < len {
        let end = (at + COMPARE_CHUNK).min(len);
        if a[at..end] != b[at..end] {
            return at
                + a[at..end]
                    .iter()
                    .zip(&b[at..end])
                    .take_while(|(x, y)| x == y)
                    .count();
        }
        at = end;
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_prefix_finds_the_first_difference_across_chunks() {
        let a = vec![7u8; 3 * COMPARE_CHUNK + 5];
        for at in [
            0,
            1,
            COMPARE_CHUNK - 1,
            COMPARE_CHUNK,
            2 * COMPARE_CHUNK + 3,
        ] {
            let mut b = a.clone();
            b[at] = 8;
            assert_eq!(common_prefix_len(&a, &b), at);
        }
        assert_eq!(common_prefix_len(&a, &a[..10]), 10);
        assert_eq!(common_prefix_len(&a, &a), a.len());
    }

    #[test]
    fn nesting_is_counted_outside_strings_only() {
        let nested = |depth: usize, inner: &str| {
            format!("{}{inner}{}", "[".repeat(depth), "]".repeat(depth))
        };
        assert!(!nests_too_deep(nested(125, "1").as_bytes()));
        assert!(nests_too_deep(nested(126, "1").as_bytes()));
        assert!(nests_too_deep(nested(63, &nested(63, "{}")).as_bytes()));
        // Brackets in strings, after escaped quotes and backslashes, are text.
        let text = format!(r#""\"\\{}""#, "[{".repeat(200));
        assert!(!nests_too_deep(nested(120, &text).as_bytes()));
        // Closings bring the depth back down.
        let siblings = format!("[{}]", vec![nested(100, "1"); 3].join(","));
        assert!(!nests_too_deep(siblings.as_bytes()));
    }
}
