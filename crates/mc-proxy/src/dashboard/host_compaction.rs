//! What a session cost against what the host's own compaction would have cost on the same
//! calls: Claude Code's rule run over the session's ledger
//! ([`mc_core::host_compaction::estimate_host_compaction`], the rule the replay's
//! `autocompact` baseline runs), always shown as an estimate.
//!
//! Only calls that answered and recorded the client's own prompt are compared: a call from
//! before the ledger kept that prompt (schema v24) cannot be priced for the host, and a failed
//! call cost nothing either way. The session's side of the comparison is those same calls
//! plus the historian's runs from the first of them on, since the host's figure includes its
//! summary calls and the historian is what does that work here.

use mc_core::host_compaction::{HostCall, HostCompactionEstimate, estimate_host_compaction};
use mc_store::{CallRow, HistorianRun};
use serde::Serialize;

use super::cost::{call_cost_usd, historian_run_cost_usd};

/// The session's cost beside the host's own compaction on the same calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostCompactionComparison {
    /// Calls compared: the ones that answered and recorded the client's own prompt.
    pub calls_compared: u64,
    /// The session's calls in all.
    pub calls_total: u64,
    /// What the compared calls cost through the proxy, list price USD.
    pub calls_cost_usd: f64,
    /// What the historian's runs cost from the first compared call on, list price USD.
    pub historian_cost_usd: f64,
    /// The two together: what the session cost on those calls.
    pub session_cost_usd: f64,
    /// What the host's own compaction would have cost on them: an estimate, by Claude Code's
    /// rule and a prompt cache modelled at token granularity.
    pub estimate: HostCompactionEstimate,
}

/// The comparison over `calls` (newest first, as the ledger reads) and the session's
/// historian `runs`; `None` when no call recorded the client's prompt.
pub fn compare(calls: &[CallRow], runs: &[HistorianRun]) -> Option<HostCompactionComparison> {
    let compared: Vec<&CallRow> = calls
        .iter()
        .rev()
        .filter(|call| (200..300).contains(&call.status) && call.client_prompt_tokens.is_some())
        .collect();
    let host_calls: Vec<HostCall<'_>> =
        compared.iter().filter_map(|call| host_call(call)).collect();
    let estimate = estimate_host_compaction(&host_calls)?;
    let since_ms = compared.first().map_or(i64::MIN, |call| call.started_ms);
    let calls_cost_usd: f64 = compared.iter().map(|call| call_cost_usd(call)).sum();
    let historian_cost_usd: f64 = runs
        .iter()
        .filter(|run| run.started_ms >= since_ms)
        .map(historian_run_cost_usd)
        .sum();
    Some(HostCompactionComparison {
        calls_compared: host_calls.len() as u64,
        calls_total: calls.len() as u64,
        calls_cost_usd,
        historian_cost_usd,
        session_cost_usd: calls_cost_usd + historian_cost_usd,
        estimate,
    })
}

/// The call as the estimate reads it; its model's window when the row names none.
fn host_call(call: &CallRow) -> Option<HostCall<'_>> {
    Some(HostCall {
        started_ms: call.started_ms,
        model: &call.model,
        client_prompt_tokens: call.client_prompt_tokens?,
        fixed_tokens: call.client_fixed_tokens.unwrap_or(0),
        window_tokens: call
            .window_tokens
            .unwrap_or_else(|| mc_core::models::model_spec(&call.model).window_tokens),
        output_tokens: call.output_tokens.unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use mc_core::SessionId;

    use super::*;

    const MINUTE_MS: i64 = 60_000;

    fn call(minute: i64, client: Option<u64>, status: u16) -> CallRow {
        CallRow {
            session: SessionId::new("s").ok(),
            pass_seq: None,
            started_ms: minute * MINUTE_MS,
            route: "anthropic".to_owned(),
            model: "claude-sonnet-4-5".to_owned(),
            pass_kind: Some("cache_hit".to_owned()),
            bust_cause: None,
            status,
            uncached_tokens: Some(10),
            cache_write_tokens: Some(1_000),
            cache_read_tokens: Some(9_000),
            output_tokens: Some(200),
            first_byte_ms: None,
            total_ms: 1_000,
            stop_reason: None,
            usable_window: Some(180_000),
            overflow_retry: false,
            error: None,
            client_prompt_tokens: client,
            client_fixed_tokens: client.map(|_| 3_000),
            window_tokens: client.map(|_| 200_000),
        }
    }

    /// A historian run on Haiku 4.5 ($1 in, $5 out) that cost `millions` of input dollars.
    fn run(minute: i64, millions: u64) -> HistorianRun {
        HistorianRun {
            started_ms: minute * MINUTE_MS,
            finished_ms: minute * MINUTE_MS + 1_000,
            chunk_start: 0,
            chunk_end: 10,
            outcome: "published".to_owned(),
            model: Some("claude-haiku-4-5".to_owned()),
            calls: 1,
            input_tokens: millions * 1_000_000,
            output_tokens: 0,
            compartments: 1,
            detail: None,
        }
    }

    #[test]
    fn calls_without_the_client_prompt_give_no_estimate() {
        let old = [call(1, None, 200), call(0, None, 200)];
        assert_eq!(compare(&old, &[run(0, 1)]), None);
        assert_eq!(compare(&[], &[]), None);
    }

    /// Old rows and failed calls are left out of both sides; the historian counts from the
    /// first compared call on.
    #[test]
    fn only_calls_that_recorded_the_client_prompt_are_compared() {
        let newest_first = [
            call(3, Some(30_000), 200),
            call(2, Some(29_000), 529),
            call(1, Some(20_000), 200),
            call(0, None, 200),
        ];
        let Some(found) = compare(&newest_first, &[run(2, 2), run(0, 4)]) else {
            panic!("no comparison");
        };
        let per_call = call_cost_usd(&newest_first[0]);
        let host = [host_call(&newest_first[2]), host_call(&newest_first[0])];
        let host: Vec<HostCall<'_>> = host.into_iter().flatten().collect();
        assert_eq!(
            found,
            HostCompactionComparison {
                calls_compared: 2,
                calls_total: 4,
                calls_cost_usd: 2.0 * per_call,
                historian_cost_usd: 2.0,
                session_cost_usd: 2.0 * per_call + 2.0,
                estimate: estimate_host_compaction(&host).unwrap(),
            }
        );
    }
}
