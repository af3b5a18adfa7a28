use proptest::prelude::*;

use super::*;
use crate::host_compaction::SUMMARY_TURN_TOKENS;

/// Sonnet 4.5: $3/$15, 64K output (a 20K reserve), a 1,024-token minimum.
const MODEL: &str = "claude-sonnet-4-5";

/// A 50K window: the trigger is 50K − 20K − 13K = 17K.
const SMALL_WINDOW: u64 = 50_000;

const MINUTE_MS: i64 = 60_000;

fn call(minute: i64, client: u64, fixed: u64, window: u64) -> HostCall<'static> {
    HostCall {
        started_ms: minute * MINUTE_MS,
        model: MODEL,
        client_prompt_tokens: client,
        fixed_tokens: fixed,
        window_tokens: window,
        output_tokens: 100,
    }
}

/// The estimate's token figures, and its cost against `cost_usd` to a millionth of a cent.
fn assert_estimate(calls: &[HostCall<'_>], expected: HostCompactionEstimate) {
    let Some(found) = estimate_host_compaction(calls) else {
        panic!("no estimate for {calls:?}");
    };
    assert!(
        (found.cost_usd - expected.cost_usd).abs() < 1e-8,
        "{found:?} against {expected:?}"
    );
    assert_eq!(
        HostCompactionEstimate {
            cost_usd: expected.cost_usd,
            ..found
        },
        expected
    );
}

/// What `input`, `write`, `read` and `output` tokens cost on [`MODEL`].
fn cost(input: u64, write: u64, read: u64, output: u64) -> f64 {
    model_spec(MODEL)
        .price
        .cost_usd(input, write, 0, read, output)
}

#[test]
fn no_calls_no_estimate() {
    assert_eq!(estimate_host_compaction(&[]), None);
}

#[test]
fn under_the_trigger_each_call_reads_the_one_before() {
    let calls = [
        call(0, 20_000, 8_000, 200_000),
        call(1, 25_000, 8_000, 200_000),
    ];
    assert_estimate(
        &calls,
        HostCompactionEstimate {
            calls: 2,
            compactions: 0,
            uncached_tokens: 0,
            cache_write_tokens: 25_000,
            cache_read_tokens: 20_000,
            output_tokens: 200,
            cost_usd: cost(0, 25_000, 20_000, 200),
        },
    );
}

/// At the trigger the host summarises (reading the conversation so far), then sends the
/// summary alone (reading only the system prompt and tools); the next call reads that.
#[test]
fn at_the_trigger_it_summarises_and_goes_on_from_the_summary() {
    let calls = [
        call(0, 10_000, 2_000, SMALL_WINDOW),
        call(1, 18_000, 2_000, SMALL_WINDOW),
        call(2, 19_000, 2_000, SMALL_WINDOW),
    ];
    let summary_prompt = 18_000 + SUMMARY_INSTRUCTION_TOKENS;
    let after = 2_000 + SUMMARY_TURN_TOKENS;
    let writes = [10_000, summary_prompt - 10_000, SUMMARY_TURN_TOKENS, 1_000];
    let reads = [0, 10_000, 2_000, after];
    assert_estimate(
        &calls,
        HostCompactionEstimate {
            calls: 3,
            compactions: 1,
            uncached_tokens: 0,
            cache_write_tokens: writes.iter().sum(),
            cache_read_tokens: reads.iter().sum(),
            output_tokens: 300 + SUMMARY_OUTPUT_TOKENS,
            cost_usd: cost(0, writes[0], 0, 100)
                + cost(0, writes[1], reads[1], SUMMARY_OUTPUT_TOKENS)
                + cost(0, writes[2], reads[2], 100)
                + cost(0, writes[3], reads[3], 100),
        },
    );
}

/// Nothing new since the last compaction: the host sends what it has, and does not
/// summarise a summary.
#[test]
fn it_compacts_only_over_new_messages() {
    let calls = [
        call(0, 18_000, 2_000, 20_000),
        call(1, 18_000, 2_000, 20_000),
    ];
    let found = estimate_host_compaction(&calls).map(|estimate| estimate.compactions);
    assert_eq!(found, Some(1));
}

#[test]
fn an_idle_gap_past_the_ttl_reads_nothing() {
    let calls = [
        call(0, 20_000, 8_000, 200_000),
        call(6, 25_000, 8_000, 200_000),
    ];
    assert_estimate(
        &calls,
        HostCompactionEstimate {
            calls: 2,
            compactions: 0,
            uncached_tokens: 0,
            cache_write_tokens: 45_000,
            cache_read_tokens: 0,
            output_tokens: 200,
            cost_usd: cost(0, 45_000, 0, 200),
        },
    );
}

/// A client prompt smaller than the last one is a rewritten history: the host's summary no
/// longer applies, and only the system prompt and tools are still cached.
#[test]
fn a_rewritten_history_starts_over() {
    let calls = [
        call(0, 10_000, 2_000, SMALL_WINDOW),
        call(1, 18_000, 2_000, SMALL_WINDOW),
        call(2, 6_000, 2_000, SMALL_WINDOW),
    ];
    let Some(found) = estimate_host_compaction(&calls) else {
        panic!("no estimate");
    };
    let Some(before) = estimate_host_compaction(&calls[..2]) else {
        panic!("no estimate");
    };
    assert_eq!(
        (
            found.cache_read_tokens - before.cache_read_tokens,
            found.cache_write_tokens - before.cache_write_tokens,
        ),
        (2_000, 4_000)
    );
}

/// Another model, or another system prompt, shares no cache with the call before.
#[test]
fn a_model_or_system_change_reads_nothing() {
    let first = call(0, 20_000, 8_000, 200_000);
    let other_model = HostCall {
        model: "claude-opus-4-5",
        ..call(1, 25_000, 8_000, 200_000)
    };
    let other_system = call(1, 25_000, 9_000, 200_000);
    for next in [other_model, other_system] {
        let found = estimate_host_compaction(&[first, next]).map(|e| e.cache_read_tokens);
        assert_eq!(found, Some(0), "{next:?}");
    }
}

/// A prompt under the model's minimum cacheable prefix is sent uncached and leaves nothing.
#[test]
fn a_prompt_under_the_minimum_is_uncached() {
    let calls = [call(0, 900, 300, 200_000), call(1, 1_000, 300, 200_000)];
    assert_estimate(
        &calls,
        HostCompactionEstimate {
            calls: 2,
            compactions: 0,
            uncached_tokens: 1_900,
            cache_write_tokens: 0,
            cache_read_tokens: 0,
            output_tokens: 200,
            cost_usd: cost(1_900, 0, 0, 200),
        },
    );
}

/// Calls in order: each one a little later (sometimes past the TTL), its client prompt
/// usually grown (sometimes rewritten), on one of two models.
fn arb_calls() -> impl Strategy<Value = Vec<HostCall<'static>>> {
    let step = (
        0..600_000i64,
        0..40_000u64,
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.2),
        0..5_000u64,
    );
    (
        1_000..30_000u64,
        30_000..400_000u64,
        prop::collection::vec(step, 1..60),
    )
        .prop_map(|(fixed, window, steps)| {
            let mut at_ms = 0;
            let mut client = fixed;
            steps
                .into_iter()
                .map(|(gap_ms, growth, rewrite, opus, output)| {
                    at_ms += gap_ms;
                    client = if rewrite {
                        fixed + growth
                    } else {
                        client + growth
                    };
                    HostCall {
                        started_ms: at_ms,
                        model: if opus { "claude-opus-4-5" } else { MODEL },
                        client_prompt_tokens: client,
                        fixed_tokens: fixed,
                        window_tokens: window,
                        output_tokens: output,
                    }
                })
                .collect()
        })
}

proptest! {
    /// The estimate is a price: never negative, never NaN, one client call per call given,
    /// at most one compaction per call.
    #[test]
    fn the_estimate_is_a_price_over_every_call(calls in arb_calls()) {
        let Some(found) = estimate_host_compaction(&calls) else {
            return Err(TestCaseError::fail("no estimate"));
        };
        prop_assert!(found.cost_usd.is_finite() && found.cost_usd >= 0.0, "{found:?}");
        prop_assert_eq!(found.calls, calls.len() as u64);
        prop_assert!(found.compactions <= found.calls);
    }

    /// One more call never makes the session cheaper: each call only adds to the bill.
    #[test]
    fn the_estimate_grows_with_the_calls(calls in arb_calls()) {
        let mut last = 0.0;
        for end in 1..=calls.len() {
            let cost = estimate_host_compaction(&calls[..end]).map_or(-1.0, |e| e.cost_usd);
            prop_assert!(cost >= last, "{} calls cost {} after {}", end, cost, last);
            last = cost;
        }
    }

    /// Below the trigger the host sends exactly what the client sent: the input priced is
    /// the client's prompts, token for token.
    #[test]
    fn under_the_trigger_the_host_sends_the_client_prompts(calls in arb_calls()) {
        let roomy: Vec<HostCall<'_>> = calls
            .iter()
            .map(|call| HostCall { window_tokens: 10_000_000, ..*call })
            .collect();
        let Some(found) = estimate_host_compaction(&roomy) else {
            return Err(TestCaseError::fail("no estimate"));
        };
        let sent: u64 = roomy.iter().map(|call| call.client_prompt_tokens).sum();
        prop_assert_eq!(found.compactions, 0);
        prop_assert_eq!(
            found.uncached_tokens + found.cache_write_tokens + found.cache_read_tokens,
            sent
        );
    }
}
