//! Remembered request bodies, and what a follow-up shares with them.
//!
//! A client resends its previous body's bytes up to its first new entry, so whoever decodes
//! or prepares a follow-up by its new part alone (the proxy's incremental decodes, the agent
//! tools' walks) keeps a few recent bodies, takes out the one a follow-up repeats most of,
//! and compares only past what is already known to be shared ([`KnownStart`]).

use std::collections::VecDeque;
use std::ops::Range;

use crate::chunked_body::ChunkedBody;

/// Bodies remembered at most; a proxy serves a handful of live conversations at a time,
/// and each follow-up is compared with every remembered body.
const REMEMBERED: usize = 16;

/// Takes out of `recent` the entry whose body `body` repeats through the most whole messages
/// (at least one), the latest on a tie, with how many leading bytes the two bodies share;
/// `layout` gives an entry's body and its messages' ranges. Every follow-up is compared with
/// each remembered body once (past what `known` vouches for), and the shared length is kept
/// for [`crate::list_split::Split::extend`].
pub fn take_longest_prefix<E>(
    recent: &mut VecDeque<E>,
    body: &ChunkedBody,
    known: Option<&KnownStart>,
    layout: impl Fn(&E) -> (&ChunkedBody, &[Range<usize>]),
) -> Option<(E, usize)> {
    let (_, position, equal) = recent
        .iter()
        .enumerate()
        .map(|(position, entry)| {
            let (remembered, ranges) = layout(entry);
            let equal = shared_prefix_len(known, remembered, body);
            let whole = ranges.partition_point(|range| range.end <= equal);
            (whole, position, equal)
        })
        .filter(|&(whole, _, _)| whole > 0)
        .max_by_key(|&(whole, position, _)| (whole, position))?;
    Some((recent.remove(position)?, equal))
}

/// Appends `entry` to `recent` (most recent last), then forgets the oldest entries while
/// more than [`REMEMBERED`] are kept or they hold more than `budget_bytes` (`held` says what
/// each holds).
pub fn remember_within<E>(
    recent: &mut VecDeque<E>,
    entry: E,
    budget_bytes: usize,
    held: impl Fn(&E) -> usize,
) {
    recent.push_back(entry);
    let mut bytes: usize = recent.iter().map(&held).sum();
    while recent.len() > REMEMBERED || bytes > budget_bytes {
        match recent.pop_front() {
            Some(evicted) => bytes -= held(&evicted),
            None => break,
        }
    }
}

/// What the maker of a body knows of its first bytes, so that its decode need not compare
/// them again: the agent tools' walk assembles the body a pass reads from the encodings it
/// kept since the previous call, so that body starts, by construction, with the previous
/// prepared body's bytes, the body the decode remembered. Comparing the two byte for byte
/// read the whole conversation once more on every call.
///
/// A body's first `shared` bytes are those of `of`.
#[derive(Debug, Clone)]
pub struct KnownStart {
    of: ChunkedBody,
    shared: usize,
}

impl KnownStart {
    /// What the caller has proved: the body this goes with starts with `of[..shared]`.
    pub fn new(of: ChunkedBody, shared: usize) -> Self {
        let shared = shared.min(of.len());
        Self { of, shared }
    }

    /// The body it says the start of.
    pub fn of(&self) -> &ChunkedBody {
        &self.of
    }

    /// How many of its first bytes are `of`'s.
    pub fn shared(&self) -> usize {
        self.shared
    }
}

/// How many leading bytes `body` shares with `remembered`: without a compare through the
/// bytes `known` vouches for when `remembered` is its `of` itself
/// ([`ChunkedBody::is_same_as`]), compared past them.
fn shared_prefix_len(
    known: Option<&KnownStart>,
    remembered: &ChunkedBody,
    body: &ChunkedBody,
) -> usize {
    let vouched = known
        .filter(|known| !remembered.is_empty() && known.of.is_same_as(remembered))
        .map_or(0, |known| known.shared.min(body.len()));
    remembered.common_prefix_len(body, vouched)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn one(bytes: &'static [u8]) -> ChunkedBody {
        ChunkedBody::from(Bytes::from_static(bytes))
    }

    #[test]
    fn the_vouched_bytes_are_skipped_only_for_the_very_body_vouched_for() {
        let remembered = one(b"[1,2,3]");
        let body = &one(b"[1,2,4]");
        // Vouched through 5 bytes of `remembered` itself: compared from there.
        let known = KnownStart::new(remembered.clone(), 5);
        assert_eq!(shared_prefix_len(Some(&known), &remembered, body), 5);
        // A lie about the very body is believed (the maker's proof), and only up to it.
        let lying = KnownStart::new(remembered.clone(), 3);
        assert_eq!(
            shared_prefix_len(Some(&lying), &remembered, &one(b"[9,2,4]")),
            5
        );
        // An equal body elsewhere in memory is compared whole.
        let elsewhere = ChunkedBody::from(remembered.to_bytes().to_vec());
        assert_eq!(
            shared_prefix_len(Some(&known), &elsewhere, &one(b"[9,2,4]")),
            1
        );
        assert_eq!(shared_prefix_len(None, &remembered, body), 5);
        // Never past the body's end.
        let whole = KnownStart::new(remembered.clone(), 99);
        assert_eq!(whole.shared(), 7);
        assert_eq!(
            shared_prefix_len(Some(&whole), &remembered, &one(b"[1,")),
            3
        );
    }
}
