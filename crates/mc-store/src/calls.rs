//! The call ledger: one row per upstream call the proxy makes.
//!
//! A pass row says what the engine decided; a call row says what it cost once the provider
//! answered (token figures, latency, status). Kept apart because one pass can produce two
//! calls (an overflow's emergency retry) and a call can be refused before any pass ran. Rows
//! are written after the response ends, in their own transaction, so a slow stream never
//! holds the write lock.

use mc_core::SessionId;
use rusqlite::{Row, ffi};

use crate::error::{Result, StoreError};
use crate::store::{ReadTx, WriteTx};

/// One upstream call as the ledger keeps it.
///
/// Token figures are `None` when the provider never reported them (an error, a stream cut
/// before its usage), which the aggregates tell apart from a reported zero.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRow {
    /// The session, or `None` when the call was refused before its session was resolved.
    pub session: Option<SessionId>,
    /// The engine pass that produced the request.
    pub pass_seq: Option<u64>,
    /// When the call started, unix milliseconds.
    pub started_ms: i64,
    /// The provider route: `anthropic`, `openai`, `openai_responses`, or
    /// `openai_responses_stateful` for a Responses call forwarded unmanaged because its
    /// history lives at the provider.
    pub route: String,
    /// The model the request named.
    pub model: String,
    /// The pass's kind: `cache_hit`, `soft_bust` or `hard_fold`.
    pub pass_kind: Option<String>,
    /// Why the pass busted, when it did.
    pub bust_cause: Option<String>,
    /// The HTTP status the provider returned, or the proxy's own error status.
    pub status: u16,
    /// Input tokens the cache did not serve (Anthropic `input_tokens`).
    pub uncached_tokens: Option<u64>,
    /// Input tokens written to the cache.
    pub cache_write_tokens: Option<u64>,
    /// Input tokens read from the cache.
    pub cache_read_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
    /// Latency to the first upstream byte.
    pub first_byte_ms: Option<u64>,
    /// Latency to the end of the response.
    pub total_ms: u64,
    /// The provider's stop reason.
    pub stop_reason: Option<String>,
    /// The usable window the pass planned against.
    pub usable_window: Option<u64>,
    /// Whether this call was the emergency retry after an overflow error.
    pub overflow_retry: bool,
    /// Short error text; never secrets or bodies.
    pub error: Option<String>,
    /// The prompt the client sent, before the engine reduced it (system, tools and every
    /// message), as the proxy estimated it for the pass: what the host would have sent on
    /// its own. `None` for a call no pass planned, and for rows written before schema v24.
    pub client_prompt_tokens: Option<u64>,
    /// The system prompt and tools within [`Self::client_prompt_tokens`].
    pub client_fixed_tokens: Option<u64>,
    /// The context window the pass planned against, when known.
    pub window_tokens: Option<u64>,
}

impl CallRow {
    /// The whole prompt the provider reported: uncached + written + read, when it reported
    /// any of them (the figure the engine's next plan weighs).
    pub fn prompt_tokens(&self) -> Option<u64> {
        let parts = [
            self.uncached_tokens,
            self.cache_write_tokens,
            self.cache_read_tokens,
        ];
        parts
            .iter()
            .any(Option::is_some)
            .then(|| parts.iter().flatten().sum())
    }
}

/// Columns in the order [`call_from_row`] reads them.
const CALL_COLUMNS: &str = "session_id, pass_seq, started_ms, route, model, \
     pass_kind, bust_cause, status, uncached_tokens, cache_write_tokens, cache_read_tokens, \
     output_tokens, first_byte_ms, total_ms, stop_reason, usable_window, overflow_retry, error, \
     client_prompt_tokens, client_fixed_tokens, window_tokens";

/// Reads a row selected with [`CALL_COLUMNS`]. The session id was valid when written (the
/// foreign key ties it to a stored session), so an invalid one is reported as a bad row.
fn call_from_row(row: &Row<'_>) -> rusqlite::Result<CallRow> {
    let session = row
        .get::<_, Option<String>>(0)?
        .map(|id| {
            SessionId::new(id).map_err(|err| {
                rusqlite::Error::FromSqlConversionFailure(
                    0,
                    rusqlite::types::Type::Text,
                    err.into(),
                )
            })
        })
        .transpose()?;
    Ok(CallRow {
        session,
        pass_seq: row.get(1)?,
        started_ms: row.get(2)?,
        route: row.get(3)?,
        model: row.get(4)?,
        pass_kind: row.get(5)?,
        bust_cause: row.get(6)?,
        status: row.get(7)?,
        uncached_tokens: row.get(8)?,
        cache_write_tokens: row.get(9)?,
        cache_read_tokens: row.get(10)?,
        output_tokens: row.get(11)?,
        first_byte_ms: row.get(12)?,
        total_ms: row.get(13)?,
        stop_reason: row.get(14)?,
        usable_window: row.get(15)?,
        overflow_retry: row.get(16)?,
        error: row.get(17)?,
        client_prompt_tokens: row.get(18)?,
        client_fixed_tokens: row.get(19)?,
        window_tokens: row.get(20)?,
    })
}

impl WriteTx<'_> {
    /// Appends a call to the ledger and returns its row id.
    ///
    /// A call tied to a session needs that session stored first
    /// ([`StoreError::UnknownSession`] otherwise), so the ledger never names a session
    /// `status` cannot show.
    pub fn record_call(&self, row: &CallRow) -> Result<i64> {
        const DOING: &str = "recording a call";
        let sql = format!(
            "INSERT INTO calls ({CALL_COLUMNS})
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
                     ?19, ?20, ?21)"
        );
        let mut insert = self
            .conn()
            .prepare_cached(&sql)
            .map_err(StoreError::sqlite(DOING))?;
        let params = rusqlite::params![
            row.session.as_ref().map(SessionId::as_str),
            row.pass_seq,
            row.started_ms,
            row.route,
            row.model,
            row.pass_kind,
            row.bust_cause,
            row.status,
            row.uncached_tokens,
            row.cache_write_tokens,
            row.cache_read_tokens,
            row.output_tokens,
            row.first_byte_ms,
            row.total_ms,
            row.stop_reason,
            row.usable_window,
            row.overflow_retry,
            row.error,
            row.client_prompt_tokens,
            row.client_fixed_tokens,
            row.window_tokens,
        ];
        match insert.execute(params) {
            Ok(_) => Ok(self.conn().last_insert_rowid()),
            Err(source) => match (&row.session, is_foreign_key_violation(&source)) {
                (Some(session), true) => Err(StoreError::UnknownSession {
                    session: session.clone(),
                }),
                _ => Err(StoreError::sqlite(DOING)(source)),
            },
        }
    }
}

impl ReadTx<'_> {
    /// The session's newest `limit` calls, newest first (an unknown session has none).
    pub fn calls(&self, session: &SessionId, limit: usize) -> Result<Vec<CallRow>> {
        const DOING: &str = "reading calls";
        let sql = format!(
            "SELECT {CALL_COLUMNS} FROM calls WHERE session_id = ?1
             ORDER BY started_ms DESC, id DESC LIMIT ?2"
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut statement = self
            .conn()
            .prepare_cached(&sql)
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map((session.as_str(), limit), call_from_row)
            .map_err(StoreError::sqlite(DOING))?;
        rows.map(|row| row.map_err(StoreError::sqlite(DOING)))
            .collect()
    }

    /// The newest `limit` calls tied to no session, newest first: a host's side calls,
    /// forwarded as sent, and calls refused before their session was known.
    pub fn unattributed_calls(&self, limit: usize) -> Result<Vec<CallRow>> {
        const DOING: &str = "reading calls without a session";
        let sql = format!(
            "SELECT {CALL_COLUMNS} FROM calls WHERE session_id IS NULL
             ORDER BY started_ms DESC, id DESC LIMIT ?1"
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut statement = self
            .conn()
            .prepare_cached(&sql)
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([limit], call_from_row)
            .map_err(StoreError::sqlite(DOING))?;
        rows.map(|row| row.map_err(StoreError::sqlite(DOING)))
            .collect()
    }
}

fn is_foreign_key_violation(err: &rusqlite::Error) -> bool {
    matches!(
        err,
        rusqlite::Error::SqliteFailure(ffi::Error { extended_code, .. }, _)
            if *extended_code == ffi::SQLITE_CONSTRAINT_FOREIGNKEY
    )
}
