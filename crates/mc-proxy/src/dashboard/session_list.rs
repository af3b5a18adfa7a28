//! The sessions list: one row per session with what an operator scans for (how full, how
//! well cached, why it busted, what it cost), sortable and filterable by project.
//!
//! Built on the store's [`SessionStatus`] (what `status --json` prints), with the model and
//! the list-price cost added from the session's calls.

use mc_core::ProjectId;
use mc_store::{CallRow, ReadTx, SessionStatus};
use serde::{Deserialize, Serialize};

use super::cost::calls_cost_usd;

/// Most sessions one list reads: beyond this the page would not be scanned by eye anyway.
pub const MAX_LISTED: usize = 500;

/// Calls read per session to price it and name its model: the whole ledger of any session
/// a person would run (a call per model turn).
pub const CALLS_PRICED: usize = 100_000;

/// How the list is ordered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SortKey {
    /// Most recently active first.
    #[default]
    LastActivity,
    /// Fullest context first.
    ContextUsed,
    /// Best cached first.
    CacheReadShare,
    /// Most busts first.
    Busts,
    /// Most expensive first.
    Cost,
    /// By project, then most recent.
    Project,
}

impl SortKey {
    /// The name in URLs and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LastActivity => "last_activity",
            Self::ContextUsed => "context_used",
            Self::CacheReadShare => "cache_read_share",
            Self::Busts => "busts",
            Self::Cost => "cost",
            Self::Project => "project",
        }
    }
}

/// What the list is asked for.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ListQuery {
    /// Only this project's sessions (an empty value means all).
    pub project: Option<String>,
    /// The order.
    #[serde(default)]
    pub sort: SortKey,
    /// Most rows [default and cap: [`MAX_LISTED`]].
    pub limit: Option<usize>,
}

/// Busting passes for one cause.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BustSummary {
    /// The cause as the pass log names it (`unknown` when none was recorded).
    pub cause: String,
    /// How many passes.
    pub passes: u64,
}

/// One row of the list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionSummary {
    /// The session's id.
    pub id: String,
    /// The client (`claude-code`, `codex`, ...).
    pub host: String,
    /// Its project, when known.
    pub project: Option<String>,
    /// How the proxy manages it: `primary`, `subagent` or `compaction_off`.
    pub mode: String,
    /// The session a subagent works for, when known.
    pub spawned_by: Option<String>,
    /// The wire of its newest call (`anthropic`, `openai`, ...), its mode of management.
    pub wire: Option<String>,
    /// The kind of its newest pass (`cache_hit`, `soft_bust`, `hard_fold`).
    pub last_pass: Option<String>,
    /// The model of its newest call.
    pub model: Option<String>,
    /// Prompt tokens at the last successful call.
    pub context_used_tokens: Option<u64>,
    /// The usable window that call planned against.
    pub usable_window: Option<u64>,
    /// `context_used_tokens ÷ usable_window`.
    pub context_used_share: Option<f64>,
    /// Cache reads ÷ input, over the calls after the first.
    pub cache_read_share: Option<f64>,
    /// Busting passes per cause, most frequent first.
    pub busts: Vec<BustSummary>,
    /// Busting passes, all causes.
    pub bust_total: u64,
    /// Upstream calls made.
    pub calls: u64,
    /// What its calls cost at list price, USD.
    pub cost_usd: f64,
    /// Drops queued and not landed.
    pub pending_drops: u64,
    /// When a request last used it, unix milliseconds.
    pub last_seen_ms: i64,
}

/// The rows `query` asks for, in its order.
pub fn list_sessions(tx: &ReadTx<'_>, query: &ListQuery) -> mc_store::Result<Vec<SessionSummary>> {
    let limit = query.limit.unwrap_or(MAX_LISTED).min(MAX_LISTED);
    let project = query
        .project
        .as_deref()
        .map(str::trim)
        .filter(|project| !project.is_empty());
    // Filtered in memory: the store lists by recency, and a project's sessions are among
    // the most recent of the few hundred a store holds.
    let statuses = tx.recent_sessions_status(if project.is_some() { MAX_LISTED } else { limit })?;
    let mut rows = Vec::with_capacity(statuses.len());
    for status in statuses {
        let in_project = status.session.project.as_ref().map(ProjectId::as_str);
        if project.is_some_and(|wanted| in_project != Some(wanted)) {
            continue;
        }
        rows.push(summarise(tx, status)?);
        if rows.len() == limit {
            break;
        }
    }
    sort(&mut rows, query.sort);
    Ok(rows)
}

/// One session's row.
fn summarise(tx: &ReadTx<'_>, status: SessionStatus) -> mc_store::Result<SessionSummary> {
    let calls = tx.calls(&status.session.id, CALLS_PRICED)?;
    Ok(summary_of(status, &calls))
}

/// One session's row from its status and its `calls`, newest first.
pub fn summary_of(status: SessionStatus, calls: &[CallRow]) -> SessionSummary {
    let newest = calls.first();
    let busts: Vec<BustSummary> = status
        .busts
        .iter()
        .map(|bust| BustSummary {
            cause: bust.cause.clone().unwrap_or_else(|| "unknown".to_owned()),
            passes: bust.passes,
        })
        .collect();
    SessionSummary {
        id: status.session.id.as_str().to_owned(),
        host: status.session.host.as_str().to_owned(),
        project: status
            .session
            .project
            .as_ref()
            .map(|p| p.as_str().to_owned()),
        mode: status.session.mode.as_str().to_owned(),
        spawned_by: status
            .session
            .spawned_by
            .as_ref()
            .map(|parent| parent.as_str().to_owned()),
        wire: newest.map(|call| call.route.clone()),
        last_pass: status.last_pass.as_ref().map(|pass| pass.kind.clone()),
        model: newest.map(|call| call.model.clone()),
        context_used_tokens: status.context.map(|context| context.used_tokens),
        usable_window: status.context.and_then(|context| context.usable_window),
        context_used_share: status.context.and_then(|context| context.used_ratio()),
        cache_read_share: status.cache_read_share,
        bust_total: busts.iter().map(|bust| bust.passes).sum(),
        busts,
        calls: status.calls,
        cost_usd: calls_cost_usd(calls),
        pending_drops: status.pending_drops,
        last_seen_ms: status.session.last_seen_ms,
    }
}

/// Orders `rows` by `key`, largest first (projects alphabetically); ties by recency, so
/// the order is the same on every refresh.
fn sort(rows: &mut [SessionSummary], key: SortKey) {
    let share = |value: Option<f64>| value.unwrap_or(-1.0);
    rows.sort_by(|a, b| {
        let by_key = match key {
            SortKey::LastActivity => std::cmp::Ordering::Equal,
            SortKey::ContextUsed => share(b.context_used_share)
                .total_cmp(&share(a.context_used_share))
                .then(b.context_used_tokens.cmp(&a.context_used_tokens)),
            SortKey::CacheReadShare => {
                share(b.cache_read_share).total_cmp(&share(a.cache_read_share))
            }
            SortKey::Busts => b.bust_total.cmp(&a.bust_total),
            SortKey::Cost => b.cost_usd.total_cmp(&a.cost_usd),
            SortKey::Project => a.project.cmp(&b.project),
        };
        by_key
            .then(b.last_seen_ms.cmp(&a.last_seen_ms))
            .then(a.id.cmp(&b.id))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        id: &str,
        project: &str,
        cost_usd: f64,
        busts: u64,
        last_seen_ms: i64,
    ) -> SessionSummary {
        SessionSummary {
            id: id.to_owned(),
            host: "claude-code".to_owned(),
            project: Some(project.to_owned()),
            mode: "primary".to_owned(),
            spawned_by: None,
            wire: None,
            last_pass: None,
            model: None,
            context_used_tokens: None,
            usable_window: None,
            context_used_share: None,
            cache_read_share: None,
            busts: Vec::new(),
            bust_total: busts,
            calls: 0,
            cost_usd,
            pending_drops: 0,
            last_seen_ms,
        }
    }

    fn sorted(key: SortKey) -> Vec<String> {
        let mut rows = vec![
            row("a", "zeta", 0.5, 1, 100),
            row("b", "alpha", 2.0, 0, 300),
            row("c", "alpha", 0.5, 3, 200),
        ];
        sort(&mut rows, key);
        rows.into_iter().map(|row| row.id).collect()
    }

    #[test]
    fn each_key_orders_largest_first_and_ties_by_recency() {
        assert_eq!(sorted(SortKey::LastActivity), ["b", "c", "a"]);
        assert_eq!(sorted(SortKey::Cost), ["b", "c", "a"]);
        assert_eq!(sorted(SortKey::Busts), ["c", "a", "b"]);
        assert_eq!(sorted(SortKey::Project), ["b", "c", "a"]);
    }
}
