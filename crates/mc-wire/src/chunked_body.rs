//! A request body held as shared chunks, read and compared without joining them.
//!
//! A conversation's next request is mostly its previous one: the same messages, in the same
//! bytes, with a few new ones at the end. A body assembled into one fresh buffer copied the
//! whole conversation on every call, a cost that grew with the session. Held as chunks, the
//! part that did not change is a slice of the buffer it was first written into, and only
//! what is new is written: the agent tools' walk prepares the body a pass decodes this way,
//! and the proxy's render the body it sends upstream. The decoders read a message's bytes
//! with [`ChunkedBody::get`] (borrowed when one chunk holds them, as a message written at
//! once always is) and compare bodies chunk by chunk.
//!
//! A body received from a client is one chunk.

use std::borrow::Cow;
use std::ops::Range;

use bytes::Bytes;

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

    /// The bytes of `range` as the pieces of the chunks holding them, in order.
    fn pieces(&self, range: Range<usize>) -> impl Iterator<Item = &[u8]> {
        let first = self.chunk_at(range.start).unwrap_or(self.chunks.len());
        self.chunks[first..]
            .iter()
            .zip(&self.starts[first..])
            .take_while(move |&(_, &start)| start < range.end)
            .map(move |(chunk, &start)| {
                let from = range.start.saturating_sub(start);
                let to = (range.end - start).min(chunk.len());
                &chunk[from..to]
            })
    }

    /// How many leading bytes `self` and `other` share, given that their first `from` are
    /// known to be equal (compared past them only).
    pub fn common_prefix_len(&self, other: &Self, from: usize) -> usize {
        let len = self.len.min(other.len);
        if from >= len {
            return len;
        }
        let mut mine = self.pieces(from..len);
        let mut theirs = other.pieces(from..len);
        let (mut a, mut b): (&[u8], &[u8]) = (&[], &[]);
        let mut at = from;
        loop {
            if a.is_empty() {
                match mine.next() {
                    Some(piece) => a = piece,
                    None => return at,
                }
            }
            if b.is_empty() {
                match theirs.next() {
                    Some(piece) => b = piece,
                    None => return at,
                }
            }
            let step = a.len().min(b.len());
            let equal = crate::list_split::common_prefix_len(&a[..step], &b[..step]);
            at += equal;
            if equal < step {
                return at;
            }
            a = &a[step..];
            b = &b[step..];
        }
    }

    /// Whether `self`'s bytes in `range` are `other`'s in `other_range`; false when either
    /// range is outside its body.
    pub fn range_eq(&self, range: Range<usize>, other: &Self, other_range: Range<usize>) -> bool {
        if range.len() != other_range.len()
            || range.start > range.end
            || range.end > self.len
            || other_range.end > other.len
        {
            return false;
        }
        match (self.get(range.clone()), other.get(other_range.clone())) {
            (Some(Cow::Borrowed(a)), Some(Cow::Borrowed(b))) => a == b,
            _ => {
                let mine = self.slice(range).unwrap_or_default();
                let theirs = other.slice(other_range).unwrap_or_default();
                mine.common_prefix_len(&theirs, 0) == mine.len()
            }
        }
    }

    /// Whether `self` is `other` itself: the same chunks of the same buffers, so the same
    /// bytes without reading them (`Bytes` never change, and a live one's address is no
    /// other's).
    pub fn is_same_as(&self, other: &Self) -> bool {
        self.len == other.len
            && self.chunks.len() == other.chunks.len()
            && self
                .chunks
                .iter()
                .zip(&other.chunks)
                .all(|(a, b)| a.as_ptr() == b.as_ptr() && a.len() == b.len())
    }

    /// The body joined into one chunk when it has more than [`MAX_CHUNKS`].
    pub fn bounded(self) -> Self {
        if self.chunks.len() <= MAX_CHUNKS {
            return self;
        }
        Self::from(self.into_bytes())
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

#[cfg(test)]
#[path = "chunked_body_tests.rs"]
mod tests;
