//! The last upstream request sent for recent client requests, for the busy-store rule.
//!
//! DESIGN §7: a busy database never lets a turn through unmanaged. When the store stays
//! busy, a client request identical to one already managed (a retry) is answered by
//! sending the same upstream bytes again, which is exactly what a pass would have produced
//! (a retried identical request renders identical bytes). Anything else is refused.

use std::collections::VecDeque;
use std::sync::Mutex;

use bytes::Bytes;

/// How many recent requests are remembered; a retry follows its original closely.
const REMEMBERED: usize = 64;

/// Most upstream bytes remembered in all: long sessions send multi-megabyte bodies, and the
/// memory of retries must stay small next to them.
const REMEMBERED_BYTES: usize = 64 * 1024 * 1024;

/// Recent (client body hash, upstream body) pairs.
#[derive(Default)]
pub struct LastGood {
    recent: Mutex<VecDeque<([u8; 32], Bytes)>>,
}

impl LastGood {
    /// Remembers that `client_body` was sent upstream as `upstream`.
    pub fn remember(&self, client_body: &[u8], upstream: Bytes) {
        let key = *blake3::hash(client_body).as_bytes();
        if let Ok(mut recent) = self.recent.lock() {
            recent.retain(|(seen, _)| *seen != key);
            recent.push_back((key, upstream));
            let mut bytes: usize = recent.iter().map(|(_, body)| body.len()).sum();
            while recent.len() > REMEMBERED || (bytes > REMEMBERED_BYTES && recent.len() > 1) {
                if let Some((_, evicted)) = recent.pop_front() {
                    bytes -= evicted.len();
                }
            }
        }
    }

    /// The upstream body sent for an identical client body, when remembered.
    pub fn replay(&self, client_body: &[u8]) -> Option<Bytes> {
        let key = *blake3::hash(client_body).as_bytes();
        let recent = self.recent.lock().ok()?;
        recent
            .iter()
            .rev()
            .find(|(seen, _)| *seen == key)
            .map(|(_, upstream)| upstream.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replays_only_identical_requests() {
        let last = LastGood::default();
        last.remember(b"{\"a\":1}", Bytes::from_static(b"up-1"));
        assert_eq!(last.replay(b"{\"a\":1}").as_deref(), Some(&b"up-1"[..]));
        assert_eq!(last.replay(b"{\"a\":2}"), None);
        for n in 0..REMEMBERED {
            last.remember(n.to_string().as_bytes(), Bytes::new());
        }
        assert_eq!(last.replay(b"{\"a\":1}"), None, "oldest entry evicted");
    }

    #[test]
    fn memory_is_bounded_by_bytes() {
        let last = LastGood::default();
        let big = Bytes::from(vec![b'x'; REMEMBERED_BYTES / 2 + 1]);
        last.remember(b"one", big.clone());
        last.remember(b"two", big.clone());
        assert_eq!(
            last.replay(b"one"),
            None,
            "over the byte budget, the oldest goes"
        );
        assert_eq!(last.replay(b"two").map(|b| b.len()), Some(big.len()));
    }
}
