//! What the maker of a body knows of its first bytes, so that its decode need not compare
//! them again.
//!
//! The agent tools' walk assembles the body a pass reads from the encodings it kept since
//! the previous call, so that body starts, by construction, with the previous prepared
//! body's bytes, the body the decode remembered. Comparing the two byte for byte read the
//! whole conversation once more on every call.

use bytes::Bytes;

use super::common_prefix_len;

/// A body's first `shared` bytes are those of `of`.
#[derive(Debug, Clone)]
pub struct KnownStart {
    of: Bytes,
    shared: usize,
}

impl KnownStart {
    /// What the caller has proved: the body this goes with starts with `of[..shared]`.
    pub fn new(of: Bytes, shared: usize) -> Self {
        let shared = shared.min(of.len());
        Self { of, shared }
    }

    /// The body it says the start of.
    pub fn of(&self) -> &Bytes {
        &self.of
    }

    /// How many of its first bytes are `of`'s.
    pub fn shared(&self) -> usize {
        self.shared
    }
}

/// How many leading bytes `body` shares with `remembered`: without a compare through the
/// bytes `known` vouches for when `remembered` is its `of` itself (the same bytes in memory:
/// `Bytes` never change, and a live one's address is no other's), compared past them.
pub(crate) fn shared_prefix_len(
    known: Option<&KnownStart>,
    remembered: &[u8],
    body: &[u8],
) -> usize {
    let vouched = known
        .filter(|known| {
            !remembered.is_empty()
                && known.of.as_ptr() == remembered.as_ptr()
                && known.of.len() == remembered.len()
        })
        .map_or(0, |known| known.shared.min(body.len()));
    vouched + common_prefix_len(&remembered[vouched..], &body[vouched..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vouched_bytes_are_skipped_only_for_the_very_body_vouched_for() {
        let remembered = Bytes::from_static(b"[1,2,3]");
        let body = b"[1,2,4]";
        // Vouched through 5 bytes of `remembered` itself: compared from there.
        let known = KnownStart::new(remembered.clone(), 5);
        assert_eq!(shared_prefix_len(Some(&known), &remembered, body), 5);
        // A lie about the very body is believed (the maker's proof), and only up to it.
        let lying = KnownStart::new(remembered.clone(), 3);
        assert_eq!(shared_prefix_len(Some(&lying), &remembered, b"[9,2,4]"), 5);
        // An equal body elsewhere in memory is compared whole.
        let elsewhere = Bytes::copy_from_slice(&remembered);
        assert_eq!(shared_prefix_len(Some(&known), &elsewhere, b"[9,2,4]"), 1);
        assert_eq!(shared_prefix_len(None, &remembered, body), 5);
        // Never past the body's end.
        let whole = KnownStart::new(remembered.clone(), 99);
        assert_eq!(whole.shared(), 7);
        assert_eq!(shared_prefix_len(Some(&whole), &remembered, b"[1,"), 3);
    }
}
