//! One ledger row per upstream call: what the pass did and what the provider reported.
//!
//! The row is the store's own [`CallRow`], started when the call is made and completed as
//! it ends. The reported prompt size also goes back to the engine, whose next plan weighs
//! busting against the real usage rather than an estimate.

use std::time::Instant;

use mc_core::SessionId;
use mc_store::CallRow;

use crate::app::App;
use crate::clock::{elapsed_ms, unix_ms};
use crate::pass_run::Planned;
use crate::provider::Provider;
use crate::usage::CallUsage;

/// The row of the call `planned` is about to make, started at `started`; the caller sets
/// the status, and the usage, timings and error as the call ends.
pub fn call_row(
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
        route: provider.as_str().to_owned(),
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
    }
}

/// Copies what the response reported into `row`.
pub fn set_usage(row: &mut CallRow, usage: CallUsage) {
    row.uncached_tokens = usage.uncached;
    row.cache_write_tokens = usage.cache_write;
    row.cache_read_tokens = usage.cache_read;
    row.output_tokens = usage.output;
    row.stop_reason = usage.stop_reason;
}

/// Logs a call, keeps a successful call's prompt size as its session's reported usage for
/// the next pass, and queues its ledger row ([`crate::ledger_writer`]).
pub fn record_call(app: &App, row: CallRow) {
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
    app.ledger.record(row);
}

/// The session and usage a successful call reported: what the next pass plans with.
pub fn reported_usage(row: &CallRow) -> Option<(&SessionId, ReportedUsage)> {
    let tokens = row
        .prompt_tokens()
        .filter(|_| (200..300).contains(&row.status))?;
    Some((
        row.session.as_ref()?,
        ReportedUsage {
            tokens,
            pass: row.pass_seq,
        },
    ))
}

/// What the provider counted for one call's prompt, and the pass that call sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportedUsage {
    /// Input + cache read + cache write.
    pub tokens: u64,
    /// The pass whose request was counted, when known.
    pub pass: Option<u64>,
}
