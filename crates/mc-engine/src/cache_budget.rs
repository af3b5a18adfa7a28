//! How much memory the per-session caches may hold: one budget for the process, divided
//! among the caches by fixed shares.
//!
//! Every cache here is rebuilt from the store or the request when it misses, so the budget
//! trades memory for the time of a rebuild, never for correctness. The shares follow what
//! each cache holds for the same session: the remembered client request (its body and its
//! decoded messages) is the largest, then the fingerprints of tool outputs (eight bytes per
//! word), the rendered tail and the encoded upstream messages (each about the session's
//! text once), then small per-part figures.

use mc_core::SessionId;
use mc_core::reclaim::FingerprintIndex;

use crate::host_tail::HostTail;
use crate::kept_rows::KeptRows;
use crate::part_tokens::PartTokens;
use crate::rendered_tail::RenderedTail;
use crate::session_cache::SessionCache;

/// The per-session caches' budget, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheBudget {
    total_bytes: usize,
}

/// Shares of the total, in percent; they add up to 100.
mod share {
    pub const RECENT_REQUESTS: usize = 22;
    pub const PREPARED_WALKS: usize = 8;
    pub const FINGERPRINTS: usize = 20;
    pub const RENDERED_TAILS: usize = 16;
    pub const ENCODED_MESSAGES: usize = 14;
    pub const LAST_GOOD: usize = 10;
    pub const KEPT_ROWS: usize = 4;
    pub const TOKEN_MEMO: usize = 3;
    pub const PART_TOKENS: usize = 2;
    pub const RECENT_USAGE: usize = 1;
}

impl CacheBudget {
    /// 256 MiB: room for 16 live sessions of 400K tokens each (about 10 MB of cached state
    /// apiece) with a margin, so a proxy serving a team's day of sessions keeps its
    /// latency while its memory stays bounded whatever sizes the sessions reach.
    pub const DEFAULT_BYTES: usize = 256 * 1024 * 1024;

    /// A budget of `total_bytes` for all the caches together.
    pub const fn new(total_bytes: usize) -> Self {
        Self { total_bytes }
    }

    /// The whole budget.
    pub fn total_bytes(&self) -> usize {
        self.total_bytes
    }

    fn share(&self, percent: usize) -> usize {
        self.total_bytes / 100 * percent
    }

    /// Remembered client requests (bodies and decoded messages), in the proxy.
    pub fn recent_requests(&self) -> usize {
        self.share(share::RECENT_REQUESTS)
    }

    /// Remembered walks of the agent tools' preparation (client bodies and the spliced
    /// messages, encoded), in the proxy.
    pub fn prepared_walks(&self) -> usize {
        self.share(share::PREPARED_WALKS)
    }

    /// Fingerprints of tool outputs for the reclaim lanes.
    pub fn fingerprints(&self) -> usize {
        self.share(share::FINGERPRINTS)
    }

    /// Rendered tails.
    pub fn rendered_tails(&self) -> usize {
        self.share(share::RENDERED_TAILS)
    }

    /// Encoded upstream messages, in the proxy.
    pub fn encoded_messages(&self) -> usize {
        self.share(share::ENCODED_MESSAGES)
    }

    /// Upstream bodies kept for the busy-store rule, in the proxy.
    pub fn last_good(&self) -> usize {
        self.share(share::LAST_GOOD)
    }

    /// Tag indexes and drops.
    pub fn kept_rows(&self) -> usize {
        self.share(share::KEPT_ROWS)
    }

    /// Memoised token counts by content hash, in the proxy.
    pub fn token_memo(&self) -> usize {
        self.share(share::TOKEN_MEMO)
    }

    /// Token counts per part.
    pub fn part_tokens(&self) -> usize {
        self.share(share::PART_TOKENS)
    }

    /// Latest reported usage per session, in the proxy.
    pub fn recent_usage(&self) -> usize {
        self.share(share::RECENT_USAGE)
    }
}

impl Default for CacheBudget {
    fn default() -> Self {
        Self::new(Self::DEFAULT_BYTES)
    }
}

/// The engine's per-session caches, each within its share of one budget. A pass takes its
/// session's values out and puts them back once it committed.
pub(crate) struct EngineCaches {
    pub indexes: SessionCache<FingerprintIndex>,
    pub part_tokens: SessionCache<PartTokens>,
    pub rows: SessionCache<KeptRows>,
    pub tails: SessionCache<SessionTail>,
}

/// A session's tail kept between passes: rendered by the engine, or (compaction off) the
/// client's own messages. A session is in one mode at a time, so both share one budget.
pub(crate) enum SessionTail {
    Rendered(Box<RenderedTail>),
    Host(HostTail),
}

impl mc_core::HeldBytes for SessionTail {
    fn held_bytes(&self) -> usize {
        match self {
            Self::Rendered(tail) => tail.held_bytes(),
            Self::Host(tail) => tail.held_bytes(),
        }
    }
}

impl EngineCaches {
    pub fn new(budget: CacheBudget) -> Self {
        Self {
            indexes: SessionCache::with_budget(budget.fingerprints()),
            part_tokens: SessionCache::with_budget(budget.part_tokens()),
            rows: SessionCache::with_budget(budget.kept_rows()),
            tails: SessionCache::with_budget(budget.rendered_tails()),
        }
    }

    /// Drops what the caches hold for `session`: a pruned session that comes back starts
    /// again from the store, not from what was kept of it.
    pub fn forget(&self, session: &SessionId) {
        drop(self.indexes.take(session));
        drop(self.part_tokens.take(session));
        drop(self.rows.take(session));
        drop(self.tails.take(session));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_never_add_up_to_more_than_the_total() {
        for total in [0, 1, 99, 1000, CacheBudget::DEFAULT_BYTES] {
            let budget = CacheBudget::new(total);
            let sum = budget.recent_requests()
                + budget.prepared_walks()
                + budget.fingerprints()
                + budget.rendered_tails()
                + budget.encoded_messages()
                + budget.last_good()
                + budget.kept_rows()
                + budget.token_memo()
                + budget.part_tokens()
                + budget.recent_usage();
            assert!(sum <= total, "{sum} > {total}");
        }
    }
}
