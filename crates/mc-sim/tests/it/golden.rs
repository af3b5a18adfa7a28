//! Replays the recorded Claude Code session of `shared/data/anthropic-capture` through the
//! simulator with real o200k counts, and holds the token error to what was measured.

use std::path::PathBuf;

use mc_sim::{CacheState, CacheUsage, O200kCounter, apply, linearise};
use mc_wire::anthropic::{EventKind, MessagesRequest, StreamEvent, Usage};
use mc_wire::sse::SseDecoder;
use serde_json::Value;

const MODEL: &str = "claude-sonnet-4-20250514";
const LIMIT_BYTES: usize = 64 << 20;

fn capture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/anthropic-capture/claude-code-traffic.jsonl")
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
    let text = std::fs::read_to_string(capture_path()).unwrap();
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

fn simulate(calls: &[Call]) -> Vec<CacheUsage> {
    let counter = O200kCounter::load().unwrap();
    let mut state = CacheState::new();
    calls
        .iter()
        .map(|call| {
            let blocks = linearise(&call.request, &counter);
            apply(&mut state, &blocks, &call.request.model, call.now_ms).unwrap()
        })
        .collect()
}

/// Measured on 2026-11-30 with o200k_base over canonical block JSON: every call's simulated
/// (read + write) fell between 7.7% and 12.2% *below* the recorded figure (tools + system:
/// 11,860 simulated vs 13,515 recorded, -12.2%), because o200k packs Claude Code's text tighter
/// than Claude's tokenizer and the prompt template's own tokens are not modelled. A better
/// counter should narrow this band; widening it needs a reason.
const MAX_UNDERCOUNT: f64 = 0.13;

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
        // Which calls hit and which wrote is exact, not approximate.
        assert_eq!(
            (
                sim.cache_read_input_tokens > 0,
                sim.cache_creation_input_tokens > 0
            ),
            (rec_read > 0, rec_write > 0),
            "call {index}: hit/write pattern differs: simulated {sim:?}, recorded {rec:?}"
        );
        let rec_cached = (rec_read + rec_write) as f64;
        let sim_cached = (sim.cache_read_input_tokens + sim.cache_creation_input_tokens) as f64;
        let error = (sim_cached - rec_cached) / rec_cached;
        assert!(
            (-MAX_UNDERCOUNT..=0.0).contains(&error),
            "call {index}: cached tokens off by {error:+.3}: simulated {sim:?}, recorded {rec:?}"
        );
        assert!(
            sim.input_tokens.abs_diff(rec.input_tokens.unwrap_or(0)) <= MAX_INPUT_DIFF_TOKENS,
            "call {index}: input tokens differ: simulated {sim:?}, recorded {rec:?}"
        );
    }
}
