//! A session's standing at a glance, for `status` and the dashboard: what its calls cost, how
//! much the cache served, how full the window is, and why it busted.
//!
//! Everything is read in one snapshot from the call ledger, the pass log and the drops, so the
//! figures of one status agree with each other even while the proxy writes.

use mc_core::SessionId;
use rusqlite::OptionalExtension;

use crate::engine_state::PassRow;
use crate::error::{Result, StoreError};
use crate::sessions::SessionRecord;
use crate::store::ReadTx;

/// Token figures summed over a session's calls; a figure a call never reported counts as 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenTotals {
    /// Input tokens the cache did not serve.
    pub uncached: u64,
    /// Input tokens written to the cache.
    pub cache_write: u64,
    /// Input tokens read from the cache.
    pub cache_read: u64,
    /// Output tokens.
    pub output: u64,
}

/// How full the context was at the session's last successful call: the same figure the pass
/// planner compares with its thresholds (DESIGN §9, "usage").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextUse {
    /// Uncached + cache-read + cache-write input tokens of that call.
    pub used_tokens: u64,
    /// The usable window its pass planned against, when known.
    pub usable_window: Option<u64>,
    /// When that call started, unix milliseconds.
    pub at_ms: i64,
}

impl ContextUse {
    /// `used_tokens / usable_window`, when the window is known and not zero.
    pub fn used_ratio(&self) -> Option<f64> {
        match self.usable_window {
            Some(window) if window > 0 => Some(self.used_tokens as f64 / window as f64),
            Some(_) | None => None,
        }
    }
}

/// How many passes busted the cache for one cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BustCount {
    /// The cause as the pass log names it; `None` for a bust recorded without one.
    pub cause: Option<String>,
    /// Busting passes (soft busts and hard folds) with this cause.
    pub passes: u64,
}

/// A session's standing, aggregated from its calls, passes and drops.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionStatus {
    /// The session itself.
    pub session: SessionRecord,
    /// Upstream calls made for it, retries and failures included.
    pub calls: u64,
    /// Token figures summed over all its calls.
    pub tokens: TokenTotals,
    /// Cache-read tokens ÷ all input tokens, over every call after the first that reported
    /// input figures: that first call always writes the prefix, so counting it would make
    /// every young session look badly cached. `None` until such a call reported tokens.
    pub cache_read_share: Option<f64>,
    /// The context at its last successful call; `None` before one.
    pub context: Option<ContextUse>,
    /// Busting passes per cause, most frequent first (ties by cause).
    pub busts: Vec<BustCount>,
    /// Drops queued and not yet landed: work waiting for the next bust.
    pub pending_drops: u64,
    /// Its newest pass.
    pub last_pass: Option<PassRow>,
    /// The status of its newest call.
    pub last_call_status: Option<u16>,
}

/// A call counts as having reported input when any of its three input figures is known.
const REPORTED_INPUT: &str = "(uncached_tokens IS NOT NULL OR cache_write_tokens IS NOT NULL \
     OR cache_read_tokens IS NOT NULL)";

impl ReadTx<'_> {
    /// The standing of one session; `None` when the store does not know it.
    pub fn session_status(&self, session: &SessionId) -> Result<Option<SessionStatus>> {
        self.get_session(session)?
            .map(|record| self.status_of(record))
            .transpose()
    }

    /// The standing of the `limit` most recently seen sessions, most recent first (the order
    /// of [`ReadTx::list_sessions`]).
    pub fn recent_sessions_status(&self, limit: usize) -> Result<Vec<SessionStatus>> {
        self.list_sessions(limit)?
            .into_iter()
            .map(|record| self.status_of(record))
            .collect()
    }

    fn status_of(&self, session: SessionRecord) -> Result<SessionStatus> {
        let id = session.id.as_str();
        let (calls, tokens) = self.call_totals(id)?;
        Ok(SessionStatus {
            calls,
            tokens,
            cache_read_share: self.cache_read_share(id)?,
            context: self.last_context(id)?,
            busts: self.busts_by_cause(id)?,
            pending_drops: self.pending_drops(id)?,
            last_pass: self.passes(&session.id, 1)?.into_iter().next(),
            last_call_status: self.last_call_status(id)?,
            session,
        })
    }

    fn call_totals(&self, id: &str) -> Result<(u64, TokenTotals)> {
        self.conn()
            .query_row(
                "SELECT count(*), COALESCE(SUM(uncached_tokens), 0),
                        COALESCE(SUM(cache_write_tokens), 0), COALESCE(SUM(cache_read_tokens), 0),
                        COALESCE(SUM(output_tokens), 0)
                 FROM calls WHERE session_id = ?1",
                [id],
                |row| {
                    Ok((
                        row.get(0)?,
                        TokenTotals {
                            uncached: row.get(1)?,
                            cache_write: row.get(2)?,
                            cache_read: row.get(3)?,
                            output: row.get(4)?,
                        },
                    ))
                },
            )
            .map_err(StoreError::sqlite("summing a session's calls"))
    }

    fn cache_read_share(&self, id: &str) -> Result<Option<f64>> {
        let sql = format!(
            "SELECT COALESCE(SUM(cache_read_tokens), 0),
                    COALESCE(SUM(uncached_tokens), 0) + COALESCE(SUM(cache_write_tokens), 0)
                        + COALESCE(SUM(cache_read_tokens), 0)
             FROM calls
             WHERE session_id = ?1 AND {REPORTED_INPUT} AND id != (
                 SELECT id FROM calls WHERE session_id = ?1 AND {REPORTED_INPUT}
                 ORDER BY started_ms, id LIMIT 1)"
        );
        let (read, input): (u64, u64) = self
            .conn()
            .query_row(&sql, [id], |row| Ok((row.get(0)?, row.get(1)?)))
            .map_err(StoreError::sqlite("measuring a session's cache reads"))?;
        Ok((input > 0).then(|| read as f64 / input as f64))
    }

    fn last_context(&self, id: &str) -> Result<Option<ContextUse>> {
        let sql = format!(
            "SELECT COALESCE(uncached_tokens, 0) + COALESCE(cache_write_tokens, 0)
                        + COALESCE(cache_read_tokens, 0),
                    usable_window, started_ms
             FROM calls
             WHERE session_id = ?1 AND status BETWEEN 200 AND 299 AND {REPORTED_INPUT}
             ORDER BY started_ms DESC, id DESC LIMIT 1"
        );
        self.conn()
            .query_row(&sql, [id], |row| {
                Ok(ContextUse {
                    used_tokens: row.get(0)?,
                    usable_window: row.get(1)?,
                    at_ms: row.get(2)?,
                })
            })
            .optional()
            .map_err(StoreError::sqlite("reading a session's context use"))
    }

    fn busts_by_cause(&self, id: &str) -> Result<Vec<BustCount>> {
        const DOING: &str = "counting a session's busts";
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT cause, count(*) AS passes FROM passes
                 WHERE session_id = ?1 AND kind != 'cache_hit'
                 GROUP BY cause ORDER BY passes DESC, cause",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([id], |row| {
                Ok(BustCount {
                    cause: row.get(0)?,
                    passes: row.get(1)?,
                })
            })
            .map_err(StoreError::sqlite(DOING))?;
        rows.map(|row| row.map_err(StoreError::sqlite(DOING)))
            .collect()
    }

    fn pending_drops(&self, id: &str) -> Result<u64> {
        self.conn()
            .query_row(
                "SELECT count(*) FROM drops WHERE session_id = ?1 AND landed_pass IS NULL",
                [id],
                |row| row.get(0),
            )
            .map_err(StoreError::sqlite("counting a session's pending drops"))
    }

    fn last_call_status(&self, id: &str) -> Result<Option<u16>> {
        self.conn()
            .query_row(
                "SELECT status FROM calls WHERE session_id = ?1
                 ORDER BY started_ms DESC, id DESC LIMIT 1",
                [id],
                |row| row.get(0),
            )
            .optional()
            .map_err(StoreError::sqlite("reading a session's last call"))
    }
}
