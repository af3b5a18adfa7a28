//! Replays the recorded Claude Code session of `shared/data/anthropic-capture` through the
//! simulated provider with real o200k counts and the Claude calibration, and holds every call's
//! cache figures to the 5% (see `mc_sim::calibration` for the fit).

use std::path::PathBuf;
use std::sync::Arc;

use mc_sim::{CallRecord, O200kCounter, SimProvider};
use mc_wire::anthropic::{EventKind, MessagesRequest, StreamEvent, Usage};
use mc_wire::sse::SseDecoder;
use serde_json::Value;

const MODEL: &str = "claude-sonnet-4-20250514";
const LIMIT_BYTES: usize = 64 << 20;

/// The shared data folder (see `mc_testdata::dir`).
pub fn shared_data() -> PathBuf {
    mc_testdata::dir()
}

/// One recorded call: when it was sent, what it asked, what the provider reported.
struct Call {
    now_ms: u64,
    request: MessagesRequest,
    recorded: Usage,
}

/// The usage of a response: its body's, or the `message_start` event's of its SSE stream.
fn recorded_usage(response: &Value) -> Usage {
    if let Some(usage) = response["body"].get("usage") {
        return serde_json::from_value(usage.clone()).unwrap();
    }
    let raw = response["body_raw"].as_str().unwrap();
    let mut decoder = SseDecoder::new();
    let events = decoder.push(raw.as_bytes()).unwrap();
    events
        .iter()
        .map(|event| StreamEvent::decode(event.data.as_bytes(), LIMIT_BYTES).unwrap())
        .find(|event| event.kind == EventKind::MessageStart)
        .and_then(|event| event.message?.usage)
        .unwrap()
}

fn sonnet_calls() -> Vec<Call> {
    let path = shared_data().join("anthropic-capture/claude-code-traffic.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let mut calls: Vec<Call> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|row| row["request"]["body"]["model"] == MODEL)
        .map(|row| {
            let body = serde_json::to_vec(&row["request"]["body"]).unwrap();
            Call {
                now_ms: (row["request"]["timestamp"].as_f64().unwrap() * 1000.0) as u64,
                request: MessagesRequest::decode(&body, LIMIT_BYTES).unwrap(),
                recorded: recorded_usage(&row["response"]),
            }
        })
        .collect();
    calls.sort_by_key(|call| call.now_ms);
    calls
}

fn simulate(calls: &[Call]) -> Vec<CallRecord> {
    let mut provider = SimProvider::new(Arc::new(O200kCounter::load().unwrap()));
    calls
        .iter()
        .map(|call| {
            provider
                .anthropic(
                    &call.request,
                    call.recorded.output_tokens.unwrap_or(0),
                    call.now_ms,
                    None,
                )
                .unwrap()
        })
        .collect()
}

/// The bound: each of cache_creation and cache_read within 5% of the recorded total.
const MAX_ERROR: f64 = 0.05;

/// Measured 2026-11-30 with `Calibration::CLAUDE`: the cached prefix (read + write) of every
/// call fell between 1.6% below and 2.4% above the recorded one (before calibration: 7.7% to
/// 12.2% below). A better counter should narrow this band; widening it needs a reason.
const MEASURED_BAND: (f64, f64) = (-0.018, 0.026);

/// The recorded `input_tokens` after the last breakpoint were 0–8 (template tokens the
/// simulator cannot see); the simulator reports 0.
const MAX_INPUT_DIFF_TOKENS: u64 = 10;

#[test]
fn replay_matches_recorded_cache_usage() {
    let calls = sonnet_calls();
    assert_eq!(calls.len(), 17);
    let simulated = simulate(&calls);
    for (index, (call, sim)) in calls.iter().zip(&simulated).enumerate() {
        let rec = &call.recorded;
        let rec_read = rec.cache_read_input_tokens.unwrap_or(0);
        let rec_write = rec.cache_creation_input_tokens.unwrap_or(0);
        let rec_input = rec.input_tokens.unwrap_or(0);
        let sim_write = sim.cache_write_5m + sim.cache_write_1h;
        // Which calls hit and which wrote is exact, not approximate.
        assert_eq!(
            (sim.cache_read > 0, sim_write > 0),
            (rec_read > 0, rec_write > 0),
            "call {index}: hit/write pattern differs: simulated {sim:?}, recorded {rec:?}"
        );
        let total = (rec_read + rec_write + rec_input) as f64;
        let read_error = (sim.cache_read as f64 - rec_read as f64) / total;
        let write_error = (sim_write as f64 - rec_write as f64) / total;
        let cached_error = ((sim.cache_read + sim_write) as f64 - (rec_read + rec_write) as f64)
            / (rec_read + rec_write) as f64;
        eprintln!(
            "call {index:2}: read {:6} vs {rec_read:6} ({read_error:+.3}), write {sim_write:6} \
             vs {rec_write:6} ({write_error:+.3}), cached {cached_error:+.4}",
            sim.cache_read
        );
        assert!(
            read_error.abs() <= MAX_ERROR && write_error.abs() <= MAX_ERROR,
            "call {index}: read {read_error:+.3} / write {write_error:+.3} of the recorded total: \
             simulated {sim:?}, recorded {rec:?}"
        );
        assert!(
            (MEASURED_BAND.0..=MEASURED_BAND.1).contains(&cached_error),
            "call {index}: cached tokens off by {cached_error:+.4}, outside the measured band \
             {MEASURED_BAND:?}: simulated {sim:?}, recorded {rec:?}"
        );
        assert!(
            sim.input_tokens.abs_diff(rec_input) <= MAX_INPUT_DIFF_TOKENS,
            "call {index}: input tokens differ: simulated {sim:?}, recorded {rec:?}"
        );
        assert_eq!(sim.status, 200);
    }
}
