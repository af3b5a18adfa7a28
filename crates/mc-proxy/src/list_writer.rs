//! Writing a request body's message list from items encoded now and bytes copied from a
//! previous body ([`crate::encoded_chat`], [`crate::encoded_responses`]).

use std::borrow::Cow;
use std::ops::Range;

use bytes::Bytes;

/// A JSON list being written into a request body: its items separated by commas, some
/// encoded now, some copied from a previous body.
pub struct ListWriter {
    out: Vec<u8>,
    before: usize,
    empty: bool,
}

/// How many bytes of a written body lie before its list's `[` and after its `]`: the
/// request's other fields, the same bytes for a request with the same fields, so a pass
/// whose client body repeats them takes them from the previous body instead of encoding
/// the request again (its tools alone are tens of kilobytes).
#[derive(Debug, Clone, Copy)]
pub struct Around {
    before: usize,
    after: usize,
}

impl Around {
    /// The bytes before a list and after it: those of `previous` (a body written earlier,
    /// and where its list lay) when the request has the fields it was written with, else
    /// the request's fields encoded now by `encode`.
    pub fn reuse_or<'a>(
        previous: Option<(&'a [u8], Around)>,
        encode: impl FnOnce() -> (Vec<u8>, Vec<u8>),
    ) -> (Cow<'a, [u8]>, Cow<'a, [u8]>) {
        match previous {
            Some((body, around)) => {
                let after = body.len().saturating_sub(around.after);
                (
                    Cow::Borrowed(body.get(..around.before).unwrap_or_default()),
                    Cow::Borrowed(body.get(after..).unwrap_or_default()),
                )
            }
            None => {
                let (before, after) = encode();
                (Cow::Owned(before), Cow::Owned(after))
            }
        }
    }
}

impl ListWriter {
    /// A body of about `capacity` bytes starting with `before`, then the list's `[`.
    pub fn open(capacity: usize, before: &[u8]) -> Self {
        let mut out = Vec::with_capacity(capacity.max(before.len() + 1));
        out.extend_from_slice(before);
        out.push(b'[');
        Self {
            out,
            before: before.len(),
            empty: true,
        }
    }

    /// Appends one item; returns where its bytes start. Encoding a wire value into memory
    /// cannot fail.
    pub fn write(&mut self, item: &impl serde::Serialize) -> usize {
        self.separate();
        let start = self.out.len();
        let _ = serde_json::to_writer(&mut self.out, item);
        start
    }

    /// Appends items encoded before (`a,b,…`, possibly none); returns where they went.
    pub fn copy(&mut self, bytes: &[u8]) -> Range<usize> {
        if bytes.is_empty() {
            return self.out.len()..self.out.len();
        }
        self.separate();
        let start = self.out.len();
        self.out.extend_from_slice(bytes);
        start..self.out.len()
    }

    /// How many bytes are written.
    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// The body: the list closed with `]`, then `after`; and where the list lies in it.
    pub fn close(mut self, after: &[u8]) -> (Bytes, Around) {
        self.out.push(b']');
        self.out.extend_from_slice(after);
        let around = Around {
            before: self.before,
            after: after.len(),
        };
        (Bytes::from(self.out), around)
    }

    fn separate(&mut self) {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
    }
}
