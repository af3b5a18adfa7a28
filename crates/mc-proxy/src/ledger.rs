//! One record per upstream call: what the pass did and what the provider reported.
//!
//! The reported prompt size also goes back to the engine, whose next plan weighs busting
//! against the real usage rather than an estimate.

use std::time::Instant;

use mc_core::SessionId;
use mc_store::CallRow;

use crate::app::App;
use crate::clock::{elapsed_ms, unix_ms};
use crate::pass_run::{PassFacts, Planned};
use crate::provider::Provider;
use crate::usage::CallUsage;

/// A finished upstream call.
#[derive(Debug, Clone)]
pub struct CallRecord {
    /// The wire.
    pub provider: Provider,
    /// The session, when resolved.
    pub session: Option<SessionId>,
    /// The model the call named.
    pub model: String,
    /// The pass that produced the request.
    pub pass: Option<PassFacts>,
    /// The usable window the pass planned against.
    pub usable_window: Option<u64>,
    /// This call was the emergency retry after an overflow.
    pub overflow_retry: bool,
    /// When the call started, unix milliseconds.
    pub started_ms: i64,
    /// The upstream status (or the proxy's own, when the upstream was unreachable).
    pub status: u16,
    /// What the response reported.
    pub usage: CallUsage,
    /// Milliseconds to the first body byte.
    pub first_byte_ms: Option<u64>,
    /// Milliseconds for the whole call.
    pub total_ms: u64,
    /// A short error text (never a secret: upstream error bodies carry none).
    pub error: Option<String>,
}

impl CallRecord {
    /// A record for the call `planned` is about to make, started at `started`.
    pub fn new(
        provider: Provider,
        planned: &Planned,
        overflow_retry: bool,
        started: Instant,
    ) -> Self {
        let now_ms = i64::try_from(unix_ms()).unwrap_or(i64::MAX);
        let total_ms = elapsed_ms(started);
        Self {
            provider,
            session: planned.session.clone(),
            model: planned.model.clone(),
            pass: planned.pass.clone(),
            usable_window: planned.usable_window,
            overflow_retry,
            started_ms: now_ms - i64::try_from(total_ms).unwrap_or(0),
            status: 0,
            usage: CallUsage::default(),
            first_byte_ms: None,
            total_ms,
            error: None,
        }
    }
}

impl CallRecord {
    /// The store's ledger row.
    pub fn row(&self) -> CallRow {
        CallRow {
            session: self.session.clone(),
            pass_seq: self.pass.as_ref().map(|pass| pass.seq),
            started_ms: self.started_ms,
            route: self.provider.as_str().to_owned(),
            model: self.model.clone(),
            pass_kind: self.pass.as_ref().map(|pass| pass.kind.clone()),
            bust_cause: self.pass.as_ref().and_then(|pass| pass.cause.clone()),
            status: self.status,
            uncached_tokens: self.usage.uncached,
            cache_write_tokens: self.usage.cache_write,
            cache_read_tokens: self.usage.cache_read,
            output_tokens: self.usage.output,
            first_byte_ms: self.first_byte_ms,
            total_ms: self.total_ms,
            stop_reason: self.usage.stop_reason.clone(),
            usable_window: self.usable_window,
            overflow_retry: self.overflow_retry,
            error: self.error.clone(),
        }
    }
}

/// Records a finished call: a log line, its ledger row, and the reported usage for the
/// engine's next plan. A ledger write that fails is logged; it never fails the call, which
/// has already been answered.
pub fn record_call(app: &App, record: &CallRecord) {
    tracing::info!(
        session = record.session.as_ref().map(SessionId::as_str),
        route = record.provider.as_str(),
        model = %record.model,
        seq = record.pass.as_ref().map(|pass| pass.seq),
        pass = record.pass.as_ref().map(|pass| pass.kind.as_str()),
        cause = record.pass.as_ref().and_then(|pass| pass.cause.as_deref()),
        status = record.status,
        uncached = record.usage.uncached,
        cache_write = record.usage.cache_write,
        cache_read = record.usage.cache_read,
        output = record.usage.output,
        first_byte_ms = record.first_byte_ms,
        total_ms = record.total_ms,
        usable_window = record.usable_window,
        overflow_retry = record.overflow_retry,
        started_ms = record.started_ms,
        error = record.error.as_deref(),
        "upstream call"
    );
    let Ok(engine) = &app.engine else {
        return;
    };
    let usage = match (&record.session, record.usage.prompt_tokens()) {
        (Some(session), Some(prompt)) if (200..300).contains(&record.status) => {
            Some((session, prompt))
        }
        _ => None,
    };
    let written = engine.store().write_with(|tx| {
        tx.record_call(&record.row())?;
        if let Some((session, prompt)) = usage {
            engine.record_usage_in(tx, session, prompt)?;
        }
        Ok::<_, mc_engine::EngineError>(())
    });
    if let Err(error) = written {
        tracing::warn!(%error, "could not write the call's ledger row and usage");
    }
}
