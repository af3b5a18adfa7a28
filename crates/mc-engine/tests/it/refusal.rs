//! Near a provider-proven limit: fold in an emergency when something can be folded, send
//! whatever fits, refuse with a clear error only when even the minimal rendering cannot fit,
//! and never leave a trace of a refused request.

use mc_core::pass_plan::{BustCause, PassKind};
use mc_core::tags::TagNo;
use mc_engine::EngineError;

use crate::examples::{ROOMY_WINDOW, bash_session};
use crate::support::{Call, Harness, MODEL, START_MS};

/// The limit the provider proved in these tests; usage is reported at it.
const PROVEN: u64 = 10_000;

fn call(messages: &[mc_core::Message], now_ms: u64) -> Call<'_> {
    Call {
        model: MODEL,
        messages,
        now_ms,
        usable_window: ROOMY_WINDOW,
        last_usage_tokens: Some(PROVEN),
        operator_flush: false,
    }
}

/// The session's first five messages passed without a reported usage, then the provider
/// proving [`PROVEN`] at the start time.
fn start_then_prove(harness: &Harness, messages: &[mc_core::Message]) {
    harness
        .pass(&Call {
            last_usage_tokens: None,
            ..call(&messages[..5], START_MS)
        })
        .unwrap();
    harness
        .engine
        .record_proven_window(&harness.session, PROVEN, START_MS)
        .unwrap();
}

#[test]
fn at_the_proven_limit_a_request_that_fits_is_sent_though_nothing_can_be_folded() {
    let harness = Harness::new();
    let messages = bash_session(3); // 7 tags, all protected: nothing can be dropped
    start_then_prove(&harness, &messages);
    let outcome = harness.pass(&call(&messages, START_MS + 10_000)).unwrap();
    assert_eq!(outcome.plan.kind, PassKind::CacheHit, "{:#?}", outcome.plan);
    assert!(outcome.estimated_prompt_tokens < PROVEN);
}

#[test]
fn when_even_the_minimal_rendering_is_over_the_limit_the_request_is_refused_without_a_trace() {
    let harness = Harness::new();
    // A system prompt and tools larger than the proven window: nothing the engine may
    // shrink makes the request fit.
    harness.fixed_tokens.set(PROVEN + 2_000);
    let messages = bash_session(3);
    start_then_prove(&harness, &messages);
    let before = harness.snapshot();
    let refused = harness.pass(&call(&messages, START_MS + 10_000));
    let Err(EngineError::Refused { message }) = refused else {
        panic!("expected a refusal, got {refused:?}");
    };
    assert!(message.starts_with("prompt is too long"), "{message}");
    assert!(
        message.contains("the system prompt and tools alone take about"),
        "the refusal names what is in the way: {message}"
    );
    assert_eq!(
        harness.snapshot(),
        before,
        "a refused request is not ingested"
    );
}

#[test]
fn at_the_proven_limit_with_a_landable_drop_the_pass_folds_in_an_emergency() {
    let harness = Harness::new();
    let messages = bash_session(14); // 29 tags: §3§ is outside the protected 20
    harness
        .pass(&Call {
            last_usage_tokens: None,
            ..call(&messages[..27], START_MS)
        })
        .unwrap();
    harness
        .engine
        .queue_drops(&harness.session, "3", "operator", 1)
        .unwrap();
    harness
        .engine
        .record_proven_window(&harness.session, PROVEN, START_MS)
        .unwrap();
    let outcome = harness.pass(&call(&messages, START_MS + 10_000)).unwrap();
    assert_eq!(outcome.plan.kind, PassKind::SoftBust, "{:#?}", outcome.plan);
    assert_eq!(outcome.plan.cause, Some(BustCause::Emergency));
    assert!(outcome.plan.force);
    assert!(outcome.landed.contains(&TagNo(3)), "{:?}", outcome.landed);
}

#[test]
fn an_identical_retry_after_an_emergency_fold_is_sent_again() {
    let harness = Harness::new();
    let messages = bash_session(14);
    harness
        .pass(&Call {
            last_usage_tokens: None,
            ..call(&messages[..27], START_MS)
        })
        .unwrap();
    harness
        .engine
        .queue_drops(&harness.session, "3", "operator", 1)
        .unwrap();
    harness
        .engine
        .record_proven_window(&harness.session, PROVEN, START_MS)
        .unwrap();
    let request = call(&messages, START_MS + 10_000);
    let first = harness.pass(&request).unwrap();
    assert_eq!(first.plan.cause, Some(BustCause::Emergency));
    // The upstream call failed (overloaded); the client sends the same request again.
    let retry = harness.pass(&request);
    assert_eq!(
        retry.map(|outcome| outcome.messages).ok(),
        Some(first.messages),
        "DESIGN §7: a retried identical request yields byte-identical upstream bytes"
    );
}

#[test]
fn at_the_proven_limit_reclaimable_output_is_folded_not_refused() {
    let harness = Harness::new();
    // Old errored, duplicated outputs: the reclaim lanes can drop most of the prompt.
    let messages = crate::examples::repetitive_session(12, 4_000);
    harness
        .pass(&Call {
            last_usage_tokens: None,
            ..call(&messages[..5], START_MS)
        })
        .unwrap();
    // The provider proved a limit far below the configured window (a wrong model table).
    harness
        .engine
        .record_proven_window(&harness.session, PROVEN, START_MS)
        .unwrap();
    let outcome = harness.pass(&call(&messages, START_MS + 10_000));
    let outcome = outcome.unwrap_or_else(|error| panic!("refused with reclaimable work: {error}"));
    assert_eq!(outcome.plan.cause, Some(BustCause::Emergency));
    assert!(
        !outcome.landed.is_empty(),
        "{:#?} {}",
        outcome.plan,
        outcome.estimated_prompt_tokens
    );
}

/// A proven limit binds for a day, then the session plans with its window again; a flush
/// forgets it at once. (A wrong limit once refused every later request of its session.)
#[test]
fn a_proven_limit_expires_after_a_day_and_a_flush_forgets_it() {
    let day_ms = mc_engine::PROVEN_WINDOW_TTL_MS;
    for forget in ["expiry", "flush"] {
        let harness = Harness::new();
        harness.fixed_tokens.set(PROVEN + 2_000);
        let messages = bash_session(3);
        start_then_prove(&harness, &messages);
        let refused = harness.pass(&call(&messages, START_MS + 10_000));
        assert!(
            matches!(refused, Err(EngineError::Refused { .. })),
            "{forget}: {refused:?}"
        );
        let later = match forget {
            "expiry" => START_MS + day_ms + 20_000,
            _ => {
                harness.engine.request_flush(&harness.session).unwrap();
                START_MS + 20_000
            }
        };
        let sent = harness.pass(&Call {
            last_usage_tokens: None,
            ..call(&messages, later)
        });
        assert!(sent.is_ok(), "{forget}: {sent:?}");
    }
}
