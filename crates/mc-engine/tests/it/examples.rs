//! Worked examples of the pass kinds and the drop queue, one fixed session each.

use mc_core::head::M1_PLACEHOLDER;
use mc_core::pass_plan::{BustCause, PassKind};
use mc_core::reduction::DropRejection;
use mc_core::tags::TagNo;
use mc_core::{Message, Part, Role, SessionId};
use mc_engine::EngineError;
use serde_json::json;

use crate::session::TTL_MS;
use crate::support::{Call, Harness, MODEL, START_MS, rendered_tokens};

/// A window so large that no threshold is ever reached: only the clock and the operator
/// can bust.
pub const ROOMY_WINDOW: u64 = 1_000_000;

/// The task, then `turns` turns of "assistant text + one Bash call" answered by its result.
/// Tags: 1 is the task; turn `t` has its text at `2 + 2t` and its result at `3 + 2t`.
pub fn bash_session(turns: usize) -> Vec<Message> {
    let mut messages = vec![Message::new(
        Role::User,
        vec![Part::text("Make the integration tests pass.")],
    )];
    for turn in 0..turns {
        let id = format!("toolu_{turn:02}");
        messages.push(Message::new(
            Role::Assistant,
            vec![
                Part::text(format!("Step {turn}: run the suite again.")),
                Part::ToolCall {
                    id: id.clone(),
                    name: "Bash".into(),
                    input: json!({"command": format!("cargo test -p crate{turn} -- --nocapture --test-threads=1 2>&1 | tail -n 40 && echo suite-finished")}),
                },
            ],
        ));
        messages.push(Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: id,
                content: vec![Part::text(format!(
                    "test result {turn}: 3 passed; 1 failed"
                ))],
                is_error: false,
            }],
        ));
    }
    messages
}

fn call(messages: &[Message], now_ms: u64) -> Call<'_> {
    Call {
        model: MODEL,
        messages,
        now_ms,
        usable_window: ROOMY_WINDOW,
        last_usage_tokens: None,
        operator_flush: false,
    }
}

fn text_of(part: &Part) -> &str {
    match part {
        Part::Text { text, .. } => text,
        Part::ToolResult { content, .. } => content.first().map_or("", text_of),
        _ => "",
    }
}

#[test]
fn the_first_pass_folds_for_the_first_render() {
    let harness = Harness::new();
    let messages = bash_session(1);
    let outcome = harness.pass(&call(&messages, START_MS)).unwrap();
    assert_eq!(outcome.plan.kind, PassKind::HardFold);
    assert_eq!(outcome.plan.cause, Some(BustCause::FirstRender));
    assert_eq!(outcome.seq, 0);
    assert_eq!(outcome.messages.len(), 2 + messages.len());
    assert_eq!(
        outcome.messages[1].parts,
        [Part::text(M1_PLACEHOLDER)],
        "m[1] is never empty"
    );
    assert_eq!(
        text_of(&outcome.messages[2].parts[0]),
        "§1§ Make the integration tests pass."
    );
    assert_eq!(
        text_of(&outcome.messages[4].parts[0]),
        "§3§ test result 0: 3 passed; 1 failed"
    );
}

#[test]
fn a_pass_after_six_idle_minutes_folds_because_the_cache_expired() {
    let harness = Harness::new();
    let messages = bash_session(3);
    let first = harness.pass(&call(&messages[..3], START_MS)).unwrap();
    let warm = harness
        .pass(&Call {
            last_usage_tokens: Some(rendered_tokens(&first.messages)),
            ..call(&messages[..5], START_MS + 60_000)
        })
        .unwrap();
    assert_eq!(warm.plan.kind, PassKind::CacheHit);
    assert_eq!(warm.plan.cause, None);
    assert_eq!(warm.messages[..first.messages.len()], first.messages[..]);

    const SIX_MINUTES_MS: u64 = 6 * 60_000;
    const { assert!(SIX_MINUTES_MS > TTL_MS) };
    let idle = START_MS + 60_000 + SIX_MINUTES_MS;
    let cold = harness
        .pass(&Call {
            last_usage_tokens: Some(rendered_tokens(&warm.messages)),
            ..call(&messages, idle)
        })
        .unwrap();
    assert_eq!(cold.plan.kind, PassKind::HardFold);
    assert_eq!(cold.plan.cause, Some(BustCause::CacheExpired));
}

#[test]
fn an_operator_flush_lands_queued_drops_that_a_cache_hit_kept_waiting() {
    let harness = Harness::new();
    let messages = bash_session(14); // 29 tags: 1..=9 are outside the newest 20
    harness.pass(&call(&messages[..27], START_MS)).unwrap();

    let queued = harness
        .engine
        .queue_drops(&harness.session, "3, §27§", "operator", 1)
        .unwrap();
    assert_eq!(queued.accepted, [TagNo(3), TagNo(27)].into());
    assert_eq!(queued.waiting().collect::<Vec<_>>(), [TagNo(27)]);
    assert_eq!(queued.rejected().count(), 0);

    let hit = harness
        .pass(&call(&messages[..29], START_MS + 30_000))
        .unwrap();
    assert_eq!(hit.plan.kind, PassKind::CacheHit);
    assert!(hit.landed.is_empty(), "a cache hit never lands a drop");
    assert_eq!(
        text_of(&hit.messages[4].parts[0]),
        "§3§ test result 0: 3 passed; 1 failed"
    );

    let flushed = harness
        .pass(&Call {
            operator_flush: true,
            ..call(&messages[..29], START_MS + 40_000)
        })
        .unwrap();
    assert_eq!(flushed.plan.kind, PassKind::SoftBust);
    assert_eq!(flushed.plan.cause, Some(BustCause::OperatorFlush));
    assert_eq!(flushed.landed, [TagNo(3)], "tag 27 is still protected");
    assert_eq!(
        flushed.messages[0], hit.messages[0],
        "a soft bust keeps m[0]"
    );
    // The placeholder says what went: the call's tool and command (first 80 characters) and
    // the output's size.
    assert_eq!(
        text_of(&flushed.messages[4].parts[0]),
        "[dropped §3§: Bash cargo test -p crate0 -- --nocapture --test-threads=1 2>&1 | tail -n 40 && echo s…, 1 line]"
    );
    // The call whose result was dropped stays as a skeleton with its input clipped.
    let Part::ToolCall { input, .. } = &flushed.messages[3].parts[1] else {
        panic!(
            "the call of a recently dropped result stays: {:?}",
            flushed.messages[3]
        );
    };
    let command = input["command"].as_str().unwrap();
    assert!(
        command.ends_with("…[+13 chars]") && command.chars().count() == 81 + 11,
        "{command}"
    );

    let snapshot = harness.snapshot();
    assert_eq!(snapshot.landed(), [TagNo(3)].into());
    assert_eq!(snapshot.queued(), [TagNo(27)].into());
    assert_eq!(snapshot.raw_log(), messages[..29]);
}

#[test]
fn queue_answers_say_what_waits_and_what_was_refused() {
    let harness = Harness::new();
    let messages = bash_session(14);
    harness.pass(&call(&messages, START_MS)).unwrap();
    harness
        .engine
        .queue_drops(&harness.session, "4", "operator", 1)
        .unwrap();
    let outcome = harness
        .engine
        .queue_drops(&harness.session, "4-6,29,200", "operator", 2)
        .unwrap();
    assert_eq!(outcome.accepted, [TagNo(5), TagNo(6), TagNo(29)].into());
    assert_eq!(
        outcome.notes,
        [
            (TagNo(4), DropRejection::AlreadyQueued),
            (TagNo(29), DropRejection::Protected),
            (TagNo(200), DropRejection::UnknownTag),
        ]
        .into()
    );
}

#[test]
fn queueing_on_an_unknown_session_or_with_a_bad_spec_is_an_error() {
    let harness = Harness::new();
    let nobody = SessionId::new("nobody").unwrap();
    let unknown = harness.engine.queue_drops(&nobody, "3", "operator", 1);
    assert!(
        matches!(unknown, Err(EngineError::UnknownSession { .. })),
        "{unknown:?}"
    );
    harness.pass(&call(&bash_session(1), START_MS)).unwrap();
    let bad = harness
        .engine
        .queue_drops(&harness.session, "5-3", "operator", 1);
    let Err(EngineError::DropSpec(message)) = bad else {
        panic!("expected a spec error, got {bad:?}");
    };
    assert!(message.contains("runs backwards"), "{message}");
}

#[test]
fn a_shorter_request_is_diverged_and_leaves_the_store_alone() {
    let harness = Harness::new();
    let messages = bash_session(3);
    harness.pass(&call(&messages, START_MS)).unwrap();
    let before = harness.snapshot();
    let error = harness
        .pass(&call(&messages[..3], START_MS + 1_000))
        .unwrap_err();
    let EngineError::Diverged {
        common_prefix,
        stored,
        ..
    } = error
    else {
        panic!("expected Diverged, got {error:?}");
    };
    assert_eq!((common_prefix, stored), (3, 7));
    assert_eq!(harness.snapshot(), before);
}

/// Turns of four short texts and one call whose large output repeats: the texts age the
/// outputs out of the protected window quickly, and the older copies are duplicates.
pub fn repetitive_session(turns: usize, output_bytes: usize) -> Vec<Message> {
    let output = "error[E0308]: mismatched types in src/lib.rs\n".repeat(output_bytes / 45 + 1);
    let mut messages = vec![Message::new(
        Role::User,
        vec![Part::text("Fix the type error.")],
    )];
    for turn in 0..turns {
        let id = format!("toolu_{turn:02}");
        let mut parts: Vec<Part> = (0..4)
            .map(|note| Part::text(format!("note {note} of turn {turn}")))
            .collect();
        parts.push(Part::ToolCall {
            id: id.clone(),
            name: "Bash".into(),
            input: json!({"command": "cargo check"}),
        });
        messages.push(Message::new(Role::Assistant, parts));
        messages.push(Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: id,
                content: vec![Part::text(output.clone())],
                is_error: true,
            }],
        ));
    }
    messages
}

#[test]
fn at_the_execute_threshold_a_bust_that_pays_lands_reclaim_and_keeps_the_invariants() {
    let harness = Harness::new();
    let messages = repetitive_session(12, 4_000);
    let first = harness.pass(&call(&messages[..5], START_MS)).unwrap();
    let tail_tokens = crate::support::rendered_tokens(&messages);
    // 75% of the window: past the execute threshold (65%), below the force band.
    let window = tail_tokens * 100 / 75;
    let before = harness.snapshot();
    let request = Call {
        usable_window: window,
        last_usage_tokens: Some(rendered_tokens(&first.messages)),
        ..call(&messages, START_MS + 20_000)
    };
    let outcome = harness.pass(&request).unwrap();
    assert_eq!(outcome.plan.kind, PassKind::SoftBust, "{:#?}", outcome.plan);
    assert_eq!(outcome.plan.cause, Some(BustCause::ExecuteThreshold));
    assert!(!outcome.plan.force);
    assert!(!outcome.landed.is_empty());
    assert!(outcome.tokens_removed > tail_tokens / 2, "{outcome:#?}");
    let after = harness.snapshot();
    let ctx = crate::checks::PassContext {
        previous: Some(&first),
        client: &messages,
        before: &before,
        after: &after,
        protected: 20,
    };
    crate::checks::check_pass(&ctx, &outcome).unwrap();
}

#[test]
fn a_flush_requested_between_requests_lands_on_the_next_pass_only() {
    let harness = Harness::new();
    let messages = bash_session(15); // tags 1..=9 are outside the newest 20 after 29 messages
    harness.pass(&call(&messages[..27], START_MS)).unwrap();
    harness
        .engine
        .queue_drops(&harness.session, "3, §27§", "operator", 1)
        .unwrap();
    // §27§ is protected: it waits; §3§ lands on the next pass.
    assert_eq!(harness.engine.request_flush(&harness.session).unwrap(), 1);
    let flushed = harness
        .pass(&call(&messages[..29], START_MS + 30_000))
        .unwrap();
    assert_eq!(flushed.plan.cause, Some(BustCause::OperatorFlush));
    assert_eq!(flushed.landed, [TagNo(3)]);
    // The request is used up: the next turn is a cache hit again.
    let after = harness
        .pass(&call(&messages[..31], START_MS + 40_000))
        .unwrap();
    assert_eq!(after.plan.kind, PassKind::CacheHit);
    let unknown = mc_core::SessionId::new("nobody").unwrap();
    assert!(matches!(
        harness.engine.request_flush(&unknown),
        Err(mc_engine::EngineError::UnknownSession { .. })
    ));
}
