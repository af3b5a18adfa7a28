//! Writing a request body's message list from items encoded now and items shared with a
//! previous body ([`crate::encoded_messages`], [`crate::encoded_chat`],
//! [`crate::encoded_responses`]).
//!
//! The body is a [`ChunkedBody`]: what is encoded now goes into a fresh buffer, and an item
//! the previous body already holds is a slice of that body's chunks, not a copy. Items shared
//! one after the other, with the comma between them in the previous body as well, are one
//! slice: a conversation whose messages did not change is a handful of chunks, not one per
//! message.

use std::ops::Range;

use bytes::Bytes;

use crate::chunked_body::ChunkedBody;

/// A JSON list being written into a request body: its items separated by commas, some
/// encoded now, some shared with a previous body.
pub struct ListWriter<'a> {
    /// The chunks finished so far.
    body: ChunkedBody,
    /// Bytes written now and not yet a chunk (empty while `run` is open).
    fresh: Vec<u8>,
    /// Items shared with a previous body and not yet sliced from it, as one range of it.
    run: Option<(&'a ChunkedBody, Range<usize>)>,
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
    /// and where its list lay) when the request has the fields it was written with, shared
    /// with it, else the request's fields encoded now by `encode`.
    pub fn reuse_or(
        previous: Option<(&ChunkedBody, Around)>,
        encode: impl FnOnce() -> (Vec<u8>, Vec<u8>),
    ) -> (ChunkedBody, ChunkedBody) {
        let shared = previous.and_then(|(body, around)| {
            let after = body.len().checked_sub(around.after)?;
            Some((
                body.slice(0..around.before)?,
                body.slice(after..body.len())?,
            ))
        });
        shared.unwrap_or_else(|| {
            let (before, after) = encode();
            (ChunkedBody::from(before), ChunkedBody::from(after))
        })
    }
}

impl<'a> ListWriter<'a> {
    /// A body starting with `before`, then the list's `[`.
    pub fn open(before: ChunkedBody) -> Self {
        Self {
            before: before.len(),
            body: before,
            fresh: vec![b'['],
            run: None,
            empty: true,
        }
    }

    /// Appends one item; returns where its bytes start. Encoding a wire value into memory
    /// cannot fail.
    pub fn write(&mut self, item: &impl serde::Serialize) -> usize {
        self.separate();
        let start = self.len();
        let _ = serde_json::to_writer(&mut self.fresh, item);
        start
    }

    /// Appends items of `from` (`range` of it, `a,b,…`, possibly none) without copying
    /// them; returns where they went. `range` holds whole items of one list of `from`, so
    /// items that follow the open run there, one byte on, follow its comma: the two are one
    /// slice. (Reading that byte to make sure cost a cache miss per message, more than the
    /// copy it saves.)
    pub fn share(&mut self, from: &'a ChunkedBody, range: Range<usize>) -> Range<usize> {
        if range.is_empty() {
            return self.len()..self.len();
        }
        if let Some((source, run)) = &mut self.run
            && std::ptr::eq(*source, from)
            && run.end + 1 == range.start
        {
            run.end = range.end;
            let end = self.len();
            return end - range.len()..end;
        }
        self.separate();
        self.flush_fresh();
        self.flush_run();
        let start = self.len();
        self.run = Some((from, range));
        start..self.len()
    }

    /// How many bytes are written.
    pub fn len(&self) -> usize {
        let run = self.run.as_ref().map_or(0, |(_, run)| run.len());
        self.body.len() + run + self.fresh.len()
    }

    /// The body: the list closed with `]`, then `after`; and where the list lies in it.
    pub fn close(mut self, after: ChunkedBody) -> (ChunkedBody, Around) {
        self.flush_run();
        self.fresh.push(b']');
        self.flush_fresh();
        let around = Around {
            before: self.before,
            after: after.len(),
        };
        self.body.append(after);
        (self.body.bounded(), around)
    }

    /// The comma before an item, unless it is the first; written now, after any open run.
    fn separate(&mut self) {
        if !self.empty {
            self.flush_run();
            self.fresh.push(b',');
        }
        self.empty = false;
    }

    fn flush_fresh(&mut self) {
        if !self.fresh.is_empty() {
            self.body.push(Bytes::from(std::mem::take(&mut self.fresh)));
        }
    }

    fn flush_run(&mut self) {
        if let Some((source, run)) = self.run.take()
            && let Some(slices) = source.slice(run)
        {
            self.body.append(slices);
        }
    }
}

#[cfg(test)]
#[path = "list_writer_tests.rs"]
mod tests;
