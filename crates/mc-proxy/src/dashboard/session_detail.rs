//! One session in depth: its cache timeline call by call, its compartments and the tier
//! each renders at, the drops waiting for a bust, the historian's runs, and the raw log.
//!
//! Read in one snapshot, so the timeline, the totals and the drops agree.

use std::collections::BTreeSet;

use mc_core::config::Config;
use mc_core::head::{DetailTier, PRESSURE_FLOOR, decay_tier};
use mc_core::historian::render_transcript;
use mc_core::tags::TagIndex;
use mc_core::{Message, SessionId};
use mc_store::{CallRow, ReadTx};
use serde::Serialize;

use super::composition::{Composition, composition};
use super::cost::{call_cost_usd, historian_run_cost_usd};
use super::host_compaction::{HostCompactionComparison, compare};
use super::session_list::{CALLS_PRICED, SessionSummary, summary_of};

/// Calls drawn on the timeline: the newest, enough for weeks of a session's turns while the
/// page stays light.
pub const TIMELINE_CALLS: usize = 2_000;

/// Historian runs listed, newest first.
const RUNS_SHOWN: usize = 50;

/// Historian runs read to price the session beside the host's compaction: every run of any
/// session a person would keep (one per few thousand tokens of history).
const RUNS_PRICED: usize = 100_000;

/// Messages shown on each side of the ordinal the raw log is opened at.
pub const LOG_RADIUS: u64 = 10;

/// The history budget when no call has stated a window (DESIGN §9).
const UNKNOWN_WINDOW_BUDGET_TOKENS: u64 = 60_000;

/// Characters per estimated token, as the engine's coarse estimates use.
const CHARS_PER_TOKEN: u64 = 4;

/// One upstream call on the timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimelineCall {
    /// When it started, unix milliseconds.
    pub started_ms: i64,
    /// The model it named.
    pub model: String,
    /// The engine's pass for it (`cache_hit`, `soft_bust`, `hard_fold`), when managed.
    pub pass_kind: Option<String>,
    /// Why the pass busted, when it did.
    pub bust_cause: Option<String>,
    /// The status the client got.
    pub status: u16,
    /// Input tokens the cache did not serve.
    pub uncached_tokens: u64,
    /// Input tokens written to the cache.
    pub cache_write_tokens: u64,
    /// Input tokens read from the cache.
    pub cache_read_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// The usable window its pass planned against.
    pub usable_window: Option<u64>,
    /// Its list price, USD.
    pub cost_usd: f64,
}

impl TimelineCall {
    fn from_row(row: &CallRow) -> Self {
        Self {
            started_ms: row.started_ms,
            model: row.model.clone(),
            pass_kind: row.pass_kind.clone(),
            bust_cause: row.bust_cause.clone(),
            status: row.status,
            uncached_tokens: row.uncached_tokens.unwrap_or(0),
            cache_write_tokens: row.cache_write_tokens.unwrap_or(0),
            cache_read_tokens: row.cache_read_tokens.unwrap_or(0),
            output_tokens: row.output_tokens.unwrap_or(0),
            usable_window: row.usable_window,
            cost_usd: call_cost_usd(row),
        }
    }

    /// Whether this call's pass changed bytes the cache held.
    pub fn is_bust(&self) -> bool {
        self.pass_kind
            .as_deref()
            .is_some_and(|kind| kind == "soft_bust" || kind == "hard_fold")
    }

    /// All input tokens of the call.
    pub fn prompt_tokens(&self) -> u64 {
        self.uncached_tokens + self.cache_write_tokens + self.cache_read_tokens
    }
}

/// One compartment and how the decay renderer shows it now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompartmentView {
    /// First ordinal covered.
    pub start_ordinal: u64,
    /// Last ordinal covered.
    pub end_ordinal: u64,
    /// Its title.
    pub title: String,
    /// The historian's importance, 1–100.
    pub importance: u8,
    /// The tier its age, importance and the history's pressure give it.
    pub tier: DetailTier,
    /// Its one-line summary.
    pub line: String,
}

/// A drop queued and not yet landed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingDrop {
    /// The tag it drops.
    pub tag: u32,
    /// Who asked (`ctx_reduce`, `operator`, a reclaim lane).
    pub source: String,
    /// When, unix milliseconds.
    pub queued_ms: i64,
}

/// One historian run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunView {
    /// When it started, unix milliseconds.
    pub started_ms: i64,
    /// How long it took, milliseconds.
    pub took_ms: i64,
    /// The ordinals it read.
    pub chunk: (u64, u64),
    /// `published`, `failed`, ...
    pub outcome: String,
    /// The model that answered.
    pub model: Option<String>,
    /// Its model calls.
    pub calls: u32,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// What those tokens cost at the model's list price, USD (no caching assumed).
    pub cost_usd: f64,
    /// Compartments it published.
    pub compartments: u32,
    /// Why it failed or what it held back.
    pub detail: Option<String>,
}

impl RunView {
    /// A stored run as shown, priced at its model's list price.
    pub fn of(run: mc_store::HistorianRun) -> Self {
        Self {
            started_ms: run.started_ms,
            took_ms: run.finished_ms - run.started_ms,
            chunk: (run.chunk_start, run.chunk_end),
            cost_usd: historian_run_cost_usd(&run),
            outcome: run.outcome,
            model: run.model,
            calls: run.calls,
            input_tokens: run.input_tokens,
            output_tokens: run.output_tokens,
            compartments: run.compartments,
            detail: run.detail,
        }
    }
}

/// A session's page, as data.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionDetail {
    /// The row the sessions list shows.
    pub summary: SessionSummary,
    /// The execute threshold for its model, percent of the usable window.
    pub execute_threshold_percent: u8,
    /// Its calls, oldest first.
    pub timeline: Vec<TimelineCall>,
    /// What its prompt is made of as of its last pass; `None` before the first.
    pub composition: Option<Composition>,
    /// Its compartments in ordinal order.
    pub compartments: Vec<CompartmentView>,
    /// Drops waiting for the next bust.
    pub pending_drops: Vec<PendingDrop>,
    /// Historian runs, newest first.
    pub historian_runs: Vec<RunView>,
    /// Messages in its raw log.
    pub message_count: u64,
    /// The conversation it carries in its head because the client compacted that one.
    pub continues: Option<String>,
    /// What it cost against what the host's own compaction would have cost on the same
    /// calls (an estimate); `None` when no call recorded the client's own prompt.
    pub host_compaction: Option<HostCompactionComparison>,
}

/// The session `id` in depth, or `None` when the store does not know it.
pub fn session_detail(
    tx: &ReadTx<'_>,
    config: &Config,
    id: &SessionId,
) -> mc_store::Result<Option<SessionDetail>> {
    let Some(status) = tx.session_status(id)? else {
        return Ok(None);
    };
    let usable_window = status.context.and_then(|context| context.usable_window);
    let calls = tx.calls(id, CALLS_PRICED)?;
    let summary = summary_of(status, &calls);
    let mut timeline: Vec<TimelineCall> = calls
        .iter()
        .take(TIMELINE_CALLS)
        .map(TimelineCall::from_row)
        .collect();
    timeline.reverse();
    let model = summary.model.clone().unwrap_or_default();
    let execute = config
        .pass
        .execute_threshold_for(&model)
        .percent_of(mc_core::config::Tokens(usable_window.unwrap_or(0)))
        .get();
    let pending_drops = tx
        .drops(id)?
        .into_iter()
        .filter(|drop| drop.landed_pass.is_none())
        .map(|drop| PendingDrop {
            tag: drop.tag.0,
            source: drop.source,
            queued_ms: drop.queued_ms,
        })
        .collect();
    let runs = tx.historian_runs(id, RUNS_PRICED)?;
    let host_compaction = compare(&calls, &runs);
    let historian_runs = runs.into_iter().take(RUNS_SHOWN).map(RunView::of).collect();
    let budget = usable_window.map_or(UNKNOWN_WINDOW_BUDGET_TOKENS, |window| {
        window * u64::from(config.history.budget_percent.get()) / 100
    });
    let reported = timeline.last().and_then(|call| {
        let parts = [
            call.uncached_tokens,
            call.cache_write_tokens,
            call.cache_read_tokens,
        ];
        Some(parts.iter().sum::<u64>()).filter(|total| *total > 0)
    });
    Ok(Some(SessionDetail {
        composition: composition(tx, id, reported)?,
        execute_threshold_percent: execute,
        compartments: compartment_views(&tx.compartments(id)?, budget),
        message_count: tx.log_end(id)?.count,
        continues: tx.earlier_conversation(id)?.map(|row| row.earlier_session),
        summary,
        timeline,
        pending_drops,
        historian_runs,
        host_compaction,
    }))
}

/// The compartments with the tier the decay renderer picks for each (DESIGN §9): the
/// pressure is the history's natural (full-detail) cost over its budget.
fn compartment_views(
    compartments: &[mc_core::head::Compartment],
    budget_tokens: u64,
) -> Vec<CompartmentView> {
    let natural_chars: usize = compartments
        .iter()
        .map(|compartment| compartment.title.len() + compartment.tiers[0].len())
        .sum();
    let natural_tokens = u64::try_from(natural_chars).unwrap_or(u64::MAX) / CHARS_PER_TOKEN;
    let pressure = (natural_tokens as f64 / budget_tokens.max(1) as f64).max(PRESSURE_FLOOR);
    let count = compartments.len();
    compartments
        .iter()
        .enumerate()
        .map(|(index, compartment)| {
            let age = u32::try_from(count - 1 - index).unwrap_or(u32::MAX);
            CompartmentView {
                start_ordinal: compartment.start_ordinal,
                end_ordinal: compartment.end_ordinal,
                title: compartment.title.clone(),
                importance: compartment.importance,
                tier: decay_tier(age, compartment.importance, pressure),
                line: compartment.tiers[3].clone(),
            }
        })
        .collect()
}

/// The raw log around `ordinal`: what `ctx_expand` would show for those messages, one
/// compact line per message, with the range it covers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogWindow {
    /// First ordinal shown.
    pub start: u64,
    /// Last ordinal shown (inclusive); `None` when the log is empty there.
    pub end: Option<u64>,
    /// One transcript line per message.
    pub lines: Vec<String>,
}

/// The messages within [`LOG_RADIUS`] of `ordinal`.
pub fn log_window(tx: &ReadTx<'_>, id: &SessionId, ordinal: u64) -> mc_store::Result<LogWindow> {
    let start = ordinal.saturating_sub(LOG_RADIUS);
    let messages = tx.messages(id, start..=ordinal.saturating_add(LOG_RADIUS))?;
    let tags = TagIndex::new(tx.tags(id)?);
    let nothing_dropped = BTreeSet::new();
    let lines = messages
        .iter()
        .map(|stored| {
            let pair: (u64, &Message) = (stored.ordinal, &stored.message);
            render_transcript(&[pair], &tags, &nothing_dropped)
                .trim_end()
                .to_owned()
        })
        .collect();
    Ok(LogWindow {
        start,
        end: messages.last().map(|stored| stored.ordinal),
        lines,
    })
}
