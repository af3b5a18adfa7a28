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
            if recent.len() >= REMEMBERED {
                recent.pop_front();
            }
            recent.push_back((key, upstream));
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
}
