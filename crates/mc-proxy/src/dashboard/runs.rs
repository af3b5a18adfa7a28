//! The background runs across the store: the historian's (per session) and the dreamer's
//! (per project), newest first, with what each cost at list price.

use mc_store::{DreamerRun, ReadTx};
use serde::Serialize;

use super::session_detail::RunView;

/// Runs of each kind listed at most.
pub const RUNS_LISTED: usize = 200;

/// One historian run, with its session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistorianRunRow {
    /// The session it summarised.
    pub session: String,
    /// The run.
    #[serde(flatten)]
    pub run: RunView,
}

/// One dreamer run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DreamerRunRow {
    /// The task (`verify_memories`, ...).
    pub task: String,
    /// The project it ran on.
    pub project: String,
    /// When it started, unix milliseconds.
    pub started_ms: i64,
    /// How long it took, milliseconds.
    pub took_ms: i64,
    /// `done`, `failed` or `skipped`.
    pub outcome: &'static str,
    /// The model that answered, when one was asked.
    pub model: Option<String>,
    /// Its model calls.
    pub model_calls: u32,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// What its calls cost at list price, USD.
    pub cost_usd: f64,
    /// Memory changes it made.
    pub changes: u32,
    /// How it failed, when it did.
    pub failure_class: Option<String>,
    /// What it did, or why it failed or was skipped (the provider's message when one
    /// answered with an error).
    pub detail: Option<String>,
}

impl DreamerRunRow {
    fn of(run: DreamerRun) -> Self {
        Self {
            task: run.task,
            project: run.project.as_str().to_owned(),
            started_ms: run.started_ms,
            took_ms: run.finished_ms - run.started_ms,
            outcome: run.outcome.as_str(),
            model: run.model,
            model_calls: run.model_calls,
            input_tokens: run.input_tokens,
            output_tokens: run.output_tokens,
            cost_usd: run.cost_usd,
            changes: run.changes,
            failure_class: run.failure_class,
            detail: run.provider_error.or(run.detail),
        }
    }
}

/// The runs page, as data.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Runs {
    /// Historian runs, newest first.
    pub historian: Vec<HistorianRunRow>,
    /// Dreamer runs, newest first.
    pub dreamer: Vec<DreamerRunRow>,
}

/// The newest runs of each kind.
pub fn recent_runs(tx: &ReadTx<'_>) -> mc_store::Result<Runs> {
    let historian = tx
        .recent_historian_runs(RUNS_LISTED)?
        .into_iter()
        .map(|(session, run)| HistorianRunRow {
            session: session.as_str().to_owned(),
            run: RunView::of(run),
        })
        .collect();
    let dreamer = tx
        .dreamer_runs(None, RUNS_LISTED)?
        .into_iter()
        .map(DreamerRunRow::of)
        .collect();
    Ok(Runs { historian, dreamer })
}
