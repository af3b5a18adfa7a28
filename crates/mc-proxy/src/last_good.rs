//! The last upstream request sent for each recent session, for the busy-store rule.
//!
//! DESIGN §7: a busy database never lets a turn through unmanaged. When the store stays
//! busy, a client request identical to one already managed (a retry) is answered by
//! sending the same upstream bytes again, which is exactly what a pass would have produced
//! (a retried identical request renders identical bytes). Anything else is refused.
//!
//! A client retries the request it just sent, so one request per session is kept: its
//! latest. That body is the very allocation the session's encoded messages keep for the
//! next request ([`crate::encoded_messages`]), so keeping it here costs no copy. Older
//! bodies of a session were kept before, tens of megabytes for one long session, to answer
//! retries that never come. The bodies kept are bounded in bytes; past the budget the least
//! recently used sessions' bodies go. The client body is kept as it came (the allocation
//! the request and the remembered decode share) and compared only when a replay is asked
//! for: hashing it on every call cost a pass a read of the whole body.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use mc_core::SessionId;

use crate::chunked_body::ChunkedBody;

/// One session's latest managed request.
struct Latest {
    /// The client body.
    client: ChunkedBody,
    upstream: ChunkedBody,
    /// When it was remembered (a counter), for eviction.
    stamp: u64,
}

/// The latest (client body, upstream body) per session, within a byte budget.
pub struct LastGood {
    kept: Mutex<Kept>,
    budget_bytes: usize,
}

#[derive(Default)]
struct Kept {
    by_session: BTreeMap<SessionId, Latest>,
    bytes: usize,
    clock: u64,
}

impl Latest {
    fn held(&self) -> usize {
        self.client.len() + self.upstream.len()
    }
}

impl LastGood {
    /// Keeps at most `budget_bytes` of client and upstream bodies.
    pub fn new(budget_bytes: usize) -> Self {
        Self {
            kept: Mutex::new(Kept::default()),
            budget_bytes,
        }
    }

    /// Remembers that `client_body` of `session` was sent upstream as `upstream`, in place
    /// of the session's earlier request.
    pub fn remember(&self, session: &SessionId, client_body: &ChunkedBody, upstream: ChunkedBody) {
        let held = client_body.len() + upstream.len();
        let mut kept = self.lock();
        if let Some(old) = kept.by_session.remove(session) {
            kept.bytes -= old.held();
        }
        if held > self.budget_bytes {
            return;
        }
        kept.clock += 1;
        let stamp = kept.clock;
        kept.bytes += held;
        kept.by_session.insert(
            session.clone(),
            Latest {
                client: client_body.clone(),
                upstream,
                stamp,
            },
        );
        while kept.bytes > self.budget_bytes {
            let oldest = kept
                .by_session
                .iter()
                .min_by_key(|(_, latest)| latest.stamp)
                .map(|(session, _)| session.clone());
            let Some(evicted) = oldest.and_then(|session| kept.by_session.remove(&session)) else {
                break;
            };
            kept.bytes -= evicted.held();
        }
    }

    /// The upstream body sent for an identical client body, when it is a session's latest.
    pub fn replay(&self, client_body: &ChunkedBody) -> Option<ChunkedBody> {
        let len = client_body.len();
        self.lock()
            .by_session
            .values()
            .find(|latest| {
                latest.client.len() == len && latest.client.range_eq(0..len, client_body, 0..len)
            })
            .map(|latest| latest.upstream.clone())
    }

    /// The bytes of bodies kept; never above the budget.
    #[cfg(test)]
    fn held_bytes(&self) -> usize {
        self.lock().bytes
    }

    /// The table; a thread that panicked while holding it left whole entries.
    fn lock(&self) -> MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    /// A client body of `bytes`, cut in two so the comparison crosses a chunk.
    fn client(bytes: &'static [u8]) -> ChunkedBody {
        let whole = Bytes::from_static(bytes);
        let mut body = ChunkedBody::new();
        body.push(whole.slice(..bytes.len() / 2));
        body.push(whole.slice(bytes.len() / 2..));
        body
    }

    fn id(name: &str) -> SessionId {
        SessionId::new(name).unwrap()
    }

    #[test]
    fn replays_a_sessions_latest_request_only() {
        let last = LastGood::new(1 << 20);
        last.remember(
            &id("a"),
            &client(b"{\"a\":1}"),
            ChunkedBody::from(Bytes::from_static(b"up-1")),
        );
        assert_eq!(
            last.replay(&client(b"{\"a\":1}"))
                .map(|body| body.to_bytes())
                .as_deref(),
            Some(&b"up-1"[..])
        );
        assert!(last.replay(&client(b"{\"a\":2}")).is_none());
        last.remember(
            &id("b"),
            &client(b"{\"b\":1}"),
            ChunkedBody::from(Bytes::from_static(b"up-b")),
        );
        assert_eq!(
            last.replay(&client(b"{\"a\":1}"))
                .map(|body| body.to_bytes())
                .as_deref(),
            Some(&b"up-1"[..])
        );
        last.remember(
            &id("a"),
            &client(b"{\"a\":2}"),
            ChunkedBody::from(Bytes::from_static(b"up-2")),
        );
        assert!(
            last.replay(&client(b"{\"a\":1}")).is_none(),
            "replaced by the session's next"
        );
        assert_eq!(
            last.replay(&client(b"{\"a\":2}"))
                .map(|body| body.to_bytes())
                .as_deref(),
            Some(&b"up-2"[..])
        );
        assert_eq!(
            last.replay(&client(b"{\"b\":1}"))
                .map(|body| body.to_bytes())
                .as_deref(),
            Some(&b"up-b"[..])
        );
    }

    #[test]
    fn memory_is_bounded_by_bytes() {
        let budget = 1000;
        let last = LastGood::new(budget);
        for n in 0..20 {
            let body = ChunkedBody::from(vec![b'x'; 300]);
            last.remember(
                &id(&format!("s{n}")),
                &ChunkedBody::from(n.to_string().into_bytes()),
                body,
            );
            assert!(last.held_bytes() <= budget);
        }
        assert!(
            last.replay(&ChunkedBody::from(b"16".to_vec())).is_none(),
            "the least recently used went"
        );
        assert_eq!(
            last.replay(&ChunkedBody::from(b"19".to_vec()))
                .map(|body| body.len()),
            Some(300)
        );
        last.remember(
            &id("huge"),
            &client(b"huge"),
            ChunkedBody::from(vec![b'x'; budget + 1]),
        );
        assert!(
            last.replay(&client(b"huge")).is_none(),
            "larger than the budget: not kept"
        );
        assert!(last.held_bytes() <= budget);
    }
}
