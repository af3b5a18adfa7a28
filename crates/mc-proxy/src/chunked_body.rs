//! An upstream request body held as shared chunks and sent without joining them.
//!
//! A pass's upstream body is mostly the previous pass's body: the same messages, in the same
//! encoding, with a few new ones at the end. Writing it into one fresh buffer copied the whole
//! conversation on every call, a cost that grew with the session. Held as chunks, the messages
//! that did not change are slices of the buffers they were first written into, and only
//! what is new is written ([`crate::list_writer`]). The chunks go to the socket as they are,
//! with the body's exact length announced.

use std::borrow::Cow;
use std::convert::Infallible;
use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};

/// More chunks than this and a body is joined into one: each chunk keeps the buffer it
/// slices alive, so a body cut into ever more pieces over a long session would hold ever
/// more of the buffers it came from. Joining once every few dozen calls costs a fraction of
/// the copy every call made.
pub const MAX_CHUNKS: usize = 64;

/// A request body as a sequence of byte chunks.
#[derive(Debug, Clone, Default)]
pub struct ChunkedBody {
    chunks: Vec<Bytes>,
    /// Where each chunk starts in the body.
    starts: Vec<usize>,
    len: usize,
}

impl ChunkedBody {
    /// An empty body.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `chunk` (an empty one is not kept).
    pub fn push(&mut self, chunk: Bytes) {
        if chunk.is_empty() {
            return;
        }
        self.starts.push(self.len);
        self.len += chunk.len();
        self.chunks.push(chunk);
    }

    /// Appends every chunk of `other`.
    pub fn append(&mut self, other: Self) {
        for chunk in other.chunks {
            self.push(chunk);
        }
    }

    /// The body's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the body has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The chunks, in order.
    pub fn chunks(&self) -> &[Bytes] {
        &self.chunks
    }

    /// The chunk holding byte `at`.
    fn chunk_at(&self, at: usize) -> Option<usize> {
        (at < self.len).then(|| self.starts.partition_point(|&start| start <= at) - 1)
    }

    /// The bytes of `range` as slices of the chunks holding them (no copy); `None` when
    /// the range is not inside the body.
    pub fn slice(&self, range: Range<usize>) -> Option<Self> {
        if range.start > range.end || range.end > self.len {
            return None;
        }
        let mut slices = Self::new();
        let mut at = range.start;
        while at < range.end {
            let index = self.chunk_at(at)?;
            let start = self.starts[index];
            let chunk = &self.chunks[index];
            let end = range.end.min(start + chunk.len());
            slices.push(chunk.slice(at - start..end - start));
            at = end;
        }
        Some(slices)
    }

    /// The bytes of `range` in one piece: borrowed when one chunk holds them, else joined.
    pub fn get(&self, range: Range<usize>) -> Option<Cow<'_, [u8]>> {
        if range.start > range.end || range.end > self.len {
            return None;
        }
        if range.is_empty() {
            return Some(Cow::Borrowed(&[]));
        }
        let index = self.chunk_at(range.start)?;
        let start = self.starts[index];
        let chunk = &self.chunks[index];
        if range.end <= start + chunk.len() {
            return Some(Cow::Borrowed(
                &chunk[range.start - start..range.end - start],
            ));
        }
        let mut joined = Vec::with_capacity(range.len());
        for chunk in self.slice(range)?.chunks {
            joined.extend_from_slice(&chunk);
        }
        Some(Cow::Owned(joined))
    }

    /// The body in one piece (no copy when it is one chunk already).
    pub fn into_bytes(self) -> Bytes {
        match <[Bytes; 1]>::try_from(self.chunks) {
            Ok([only]) => only,
            Err(chunks) => {
                let mut joined = Vec::with_capacity(self.len);
                for chunk in &chunks {
                    joined.extend_from_slice(chunk);
                }
                Bytes::from(joined)
            }
        }
    }

    /// A copy of the body in one piece.
    pub fn to_bytes(&self) -> Bytes {
        self.clone().into_bytes()
    }

    /// The body joined into one chunk when it has more than [`MAX_CHUNKS`].
    pub fn bounded(self) -> Self {
        if self.chunks.len() <= MAX_CHUNKS {
            return self;
        }
        Self::from(self.into_bytes())
    }

    /// The body to send: a single chunk as it is, several streamed one after the other with
    /// the exact length announced (`Content-Length`, not chunked encoding).
    pub fn into_request_body(self) -> reqwest::Body {
        if self.chunks.len() <= 1 {
            return reqwest::Body::from(self.into_bytes());
        }
        reqwest::Body::wrap(Sending {
            remaining: self.len as u64,
            chunks: self.chunks.into_iter(),
        })
    }
}

impl From<Bytes> for ChunkedBody {
    fn from(bytes: Bytes) -> Self {
        let mut body = Self::new();
        body.push(bytes);
        body
    }
}

impl From<Vec<u8>> for ChunkedBody {
    fn from(bytes: Vec<u8>) -> Self {
        Self::from(Bytes::from(bytes))
    }
}

/// A body being sent: the chunks left and their length.
struct Sending {
    chunks: std::vec::IntoIter<Bytes>,
    remaining: u64,
}

impl http_body::Body for Sending {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        Poll::Ready(this.chunks.next().map(|chunk| {
            this.remaining -= chunk.len() as u64;
            Ok(Frame::data(chunk))
        }))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
#[path = "chunked_body_tests.rs"]
mod tests;
