//! One ledger row per upstream call: what the pass did and what the provider reported.
//!
//! The row is the store's own [`CallRow`], started when the call is made and completed as
//! it ends. The reported prompt size also goes back to the engine, whose next plan weighs
//! busting against the real usage rather than an estimate.

use std::time::Instant;

use axum::http::HeaderMap;
use mc_core::SessionId;
use mc_store::CallRow;

use crate::app::App;
use crate::clock::{elapsed_ms, unix_ms};
use crate::headers::header_str;
use crate::planned::Planned;
use crate::provider::Provider;
use crate::reported_usage::reported_usage;
use crate::side_call::{STATEFUL_RESPONSES_ROUTE, SideCall};
use crate::usage::{CallUsage, MAX_ERROR_CHARS};

/// What a row keeps of an upstream error body: the provider's error type and message, with
/// the client's key and anything else shaped like a credential blanked (OpenAI's 401 quotes
/// the masked key), cut after redaction. The client itself gets the body untouched.
pub fn error_text(body: &[u8], client: &HeaderMap) -> String {
    let key = header_str(client, "x-api-key").or_else(|| {
        header_str(client, "authorization").and_then(|value| value.strip_prefix("Bearer "))
    });
    let (kind, message) = mc_llm::describe_error_body(body, key);
    let text = match kind {
        Some(kind) => format!("{kind}: {message}"),
        None => message,
    };
    text.chars().take(MAX_ERROR_CHARS).collect()
}

/// The ledger row of one upstream call: started as the call is sent, from what the pass
/// planned, and written once, when the call's outcome is known. Each way a call ends is one
/// method, which takes the record, so a call cannot be written twice or left unwritten by
/// a path that forgot it.
#[derive(Debug)]
pub struct CallRecord {
    row: CallRow,
    started: Instant,
}

impl CallRecord {
    /// The record of the call `planned` makes, sent at `started`; `overflow_retry` when it is
    /// the retry after an overflow.
    pub fn start(
        provider: Provider,
        planned: &Planned,
        overflow_retry: bool,
        started: Instant,
    ) -> Self {
        Self {
            row: call_row(provider, planned, overflow_retry, started),
            started,
        }
    }

    /// No answer came: the call could not be made (`status` is the client's refusal), or
    /// the client went away first (no status).
    pub fn unanswered(self, app: &App, status: Option<u16>, error: String) {
        let mut row = self.row;
        row.status = status.unwrap_or(0);
        row.error = Some(error);
        row.total_ms = elapsed_ms(self.started);
        record_call(app, row);
    }

    /// The upstream refused with `status`; `error` is what the row keeps of its error
    /// ([`error_text`]), read whole, so its first byte is its end.
    pub fn refused(self, app: &App, status: u16, error: String) {
        let mut row = self.row;
        row.status = status;
        row.total_ms = elapsed_ms(self.started);
        row.first_byte_ms = Some(row.total_ms);
        row.error = Some(error);
        record_call(app, row);
    }

    /// The answer ended: its `status`, the `usage` it reported, why it did not end whole if
    /// it did not, and when its first byte came.
    pub fn ended(
        self,
        app: &App,
        status: u16,
        usage: CallUsage,
        error: Option<String>,
        first_byte_ms: Option<u64>,
    ) {
        let mut row = self.row;
        row.status = status;
        set_usage(&mut row, usage);
        row.error = error;
        row.first_byte_ms = first_byte_ms;
        row.total_ms = elapsed_ms(self.started);
        record_call(app, row);
    }
}

/// The row of the call `planned` is about to make, started at `started`; the caller sets
/// the status, and the usage, timings and error as the call ends.
fn call_row(
    provider: Provider,
    planned: &Planned,
    overflow_retry: bool,
    started: Instant,
) -> CallRow {
    let total_ms = elapsed_ms(started);
    let now_ms = i64::try_from(unix_ms()).unwrap_or(i64::MAX);
    CallRow {
        session: planned.session.clone(),
        pass_seq: planned.pass.as_ref().map(|pass| pass.seq),
        started_ms: now_ms - i64::try_from(total_ms).unwrap_or(0),
        route: match planned.side_call {
            Some(SideCall::StatefulResponses) => STATEFUL_RESPONSES_ROUTE.to_owned(),
            Some(
                SideCall::OpenCodeTitle
                | SideCall::OpenCodeCompaction
                | SideCall::PiCompaction
                | SideCall::CodexCompaction,
            )
            | None => provider.as_str().to_owned(),
        },
        model: planned.model.clone(),
        pass_kind: planned.pass.as_ref().map(|pass| pass.kind.clone()),
        bust_cause: planned.pass.as_ref().and_then(|pass| pass.cause.clone()),
        status: 0,
        uncached_tokens: None,
        cache_write_tokens: None,
        cache_read_tokens: None,
        output_tokens: None,
        first_byte_ms: None,
        total_ms,
        stop_reason: None,
        usable_window: planned.usable_window,
        overflow_retry,
        error: None,
        client_prompt_tokens: planned.pass.as_ref().map(|pass| pass.client_prompt_tokens),
        client_fixed_tokens: planned.pass.as_ref().map(|pass| pass.client_fixed_tokens),
        window_tokens: planned.window_tokens,
    }
}

/// Copies what the response reported into `row`.
fn set_usage(row: &mut CallRow, usage: CallUsage) {
    row.uncached_tokens = usage.uncached;
    row.cache_write_tokens = usage.cache_write;
    row.cache_read_tokens = usage.cache_read;
    row.output_tokens = usage.output;
    row.stop_reason = usage.stop_reason;
}

/// Logs a call, keeps a successful call's prompt size as its session's reported usage for
/// the next pass, and queues its ledger row ([`crate::ledger_writer`]).
fn record_call(app: &App, row: CallRow) {
    tracing::info!(
        session = row.session.as_ref().map(SessionId::as_str),
        route = %row.route,
        model = %row.model,
        seq = row.pass_seq,
        pass = row.pass_kind.as_deref(),
        cause = row.bust_cause.as_deref(),
        status = row.status,
        uncached = row.uncached_tokens,
        cache_write = row.cache_write_tokens,
        cache_read = row.cache_read_tokens,
        output = row.output_tokens,
        first_byte_ms = row.first_byte_ms,
        total_ms = row.total_ms,
        usable_window = row.usable_window,
        overflow_retry = row.overflow_retry,
        started_ms = row.started_ms,
        error = row.error.as_deref(),
        "upstream call"
    );
    if let Some((session, usage)) = reported_usage(&row) {
        app.recent_usage.put(session, usage);
    }
    // No store, no ledger: the call was a side call forwarded while the store was closed.
    if let Ok(store) = app.store.get() {
        store.ledger.record(row);
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    /// The provider's type and message survive; the client's own key (even one of no known
    /// shape) and a masked key do not.
    #[test]
    fn error_text_keeps_the_type_and_blanks_keys() {
        let mut client = HeaderMap::new();
        client.insert("x-api-key", HeaderValue::from_static("gateway-key-42"));
        let body = br#"{"type":"error","error":{"type":"authentication_error","message":"key gateway-key-42 (like sk-ant-api03-***abcd) is revoked"}}"#;
        assert_eq!(
            error_text(body, &client),
            "authentication_error: key <redacted> (like <redacted>) is revoked"
        );
        let overloaded =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(
            error_text(overloaded, &HeaderMap::new()),
            "overloaded_error: Overloaded"
        );
        let page = "<html>".repeat(100);
        assert_eq!(
            error_text(page.as_bytes(), &HeaderMap::new())
                .chars()
                .count(),
            MAX_ERROR_CHARS
        );
    }
}
