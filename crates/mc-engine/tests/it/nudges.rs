//! Nudges: given only on passes allowed to change bytes, then replayed byte for byte at the
//! place they were given, across cache hits, restarts and retried requests.

use mc_core::config::Config;
use mc_core::pass_plan::PassKind;
use mc_core::reclaim::ReclaimConfig;
use mc_core::{Message, Part, Role};
use mc_engine::PassOutcome;
use proptest::prelude::*;
use serde_json::json;

use crate::examples::ROOMY_WINDOW;
use crate::props::{Drive, cases, drive, drive_with_restarts};
use crate::session::arb_script;
use crate::support::{Call, Harness, MODEL, START_MS};

/// How every nudge starts; no client or tool text in the generated sessions does.
const NUDGE_OPENING: &str = "[context note]";

/// The rendered nudges of a pass: (message index, text).
fn nudges(outcome: &PassOutcome) -> Vec<(usize, String)> {
    outcome
        .messages
        .iter()
        .enumerate()
        .flat_map(|(index, message)| {
            message.parts.iter().filter_map(move |part| match part {
                Part::Text { text, .. } if text.starts_with(NUDGE_OPENING) => {
                    Some((index, text.clone()))
                }
                _ => None,
            })
        })
        .collect()
}

/// Each pass keeps every earlier nudge where it was; a new one appears only on a pass that
/// may mutate, at the end of the last message, which is a user message.
fn check_nudges(outcomes: &[PassOutcome]) -> Result<(), TestCaseError> {
    let mut before: Vec<(usize, String)> = Vec::new();
    for outcome in outcomes {
        let now = nudges(outcome);
        prop_assert!(
            now.starts_with(&before),
            "an earlier nudge moved or changed: before {:?}, now {:?}",
            before,
            now
        );
        let new = &now[before.len()..];
        if outcome.plan.kind == PassKind::CacheHit {
            prop_assert!(new.is_empty(), "a cache hit added a nudge: {:?}", new);
        }
        prop_assert!(new.len() <= 1, "more than one nudge in one pass: {:?}", new);
        if let Some((index, text)) = new.first() {
            prop_assert!(outcome.plan.may_mutate);
            let last = outcome.messages.last();
            prop_assert_eq!(*index, outcome.messages.len() - 1);
            prop_assert!(last.is_some_and(|message| message.role == Role::User));
            prop_assert!(
                last.and_then(|message| message.parts.last()) == Some(&Part::text(text.clone()))
            );
        }
        before = now;
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases())]

    /// Under a low threshold and a small protected window nudges are frequent (with the
    /// defaults the reclaim lanes leave too little behind); every invariant of a pass holds
    /// (a cache hit re-sends its prefix byte for byte), a nudge appears only on a pass allowed
    /// to change bytes, and a restarted engine or a retried request renders the same bytes.
    #[test]
    fn nudges_only_on_busts_and_replayed_byte_identically(
        script in arb_script(),
        threshold in 1_u64..4_000,
        quiet in 0_u32..4,
        protected in 0_u32..4,
        restarts in prop::collection::vec(any::<bool>(), 0..25),
    ) {
        let reclaim = ReclaimConfig {
            nudge_threshold_tokens: threshold,
            nudge_quiet_turns: quiet,
            ..ReclaimConfig::default()
        };
        let mut config = Config::default();
        config.reduction.protected_tags = protected;
        let harness = Harness::with_reclaim(config.clone(), reclaim.clone());
        let trace = drive(&harness, &script, Drive { check: true, retry: false })?;
        check_nudges(&trace.outcomes)?;
        let mut restarted = Harness::with_reclaim(config.clone(), reclaim.clone());
        prop_assert_eq!(
            &drive_with_restarts(&mut restarted, &script, &restarts, false)?,
            &trace
        );
        let mut no_overflow = script;
        for turn in &mut no_overflow.turns {
            turn.prove_window_percent = None;
        }
        let harness = Harness::with_reclaim(config, reclaim);
        drive(&harness, &no_overflow, Drive { check: false, retry: true })?;
    }
}

/// The task, two turns with large outputs, then `turns - 2` turns with small ones.
fn session(turns: usize) -> Vec<Message> {
    let mut messages = vec![Message::new(
        Role::User,
        vec![Part::text("Make the integration tests pass.")],
    )];
    for turn in 0..turns {
        let id = format!("toolu_{turn:02}");
        messages.push(Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: id.clone(),
                name: "Bash".into(),
                input: json!({"command": format!("cargo test -p crate{turn}")}),
            }],
        ));
        let output = if turn < 2 {
            format!("test {turn} ... ok\n").repeat(400)
        } else {
            format!("test result {turn}: 3 passed; 1 failed")
        };
        messages.push(Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: id,
                content: vec![Part::text(output)],
                is_error: false,
            }],
        ));
    }
    messages
}

#[test]
fn the_nudge_is_given_on_a_bust_and_replayed_on_the_next_cache_hit() {
    let mut config = Config::default();
    config.reduction.protected_tags = 2;
    let reclaim = ReclaimConfig {
        nudge_threshold_tokens: 1_000,
        ..ReclaimConfig::default()
    };
    let harness = Harness::with_reclaim(config, reclaim);
    let messages = session(4);
    let call = |len: usize, now_ms| Call {
        model: MODEL,
        messages: &messages[..len],
        now_ms,
        usable_window: ROOMY_WINDOW,
        last_usage_tokens: None,
        operator_flush: false,
    };
    let first = harness.pass(&call(messages.len() - 2, START_MS)).unwrap();
    assert_eq!(first.plan.kind, PassKind::HardFold);
    assert!(first.landed.is_empty());
    let next = harness
        .pass(&call(messages.len(), START_MS + 10_000))
        .unwrap();
    assert_eq!(next.plan.kind, PassKind::CacheHit);
    let nudged = first.messages.len() - 1;
    assert_eq!(nudges(&first), [(nudged, nudges(&next)[0].1.clone())]);
    assert_eq!(next.messages[nudged], first.messages[nudged]);
    let rendered = json!({
        "given": &first.messages[nudged],
        "replayed": &next.messages[nudged..],
    });
    insta::assert_snapshot!(serde_json::to_string_pretty(&rendered).unwrap());
}

/// The first pass of `session(4)` less its last turn, under a low threshold, with `config`
/// and the model able to call `ctx_reduce` or not: its nudge, if it got one.
fn first_nudge(config: Config, reduce_tool: bool) -> Option<String> {
    let reclaim = ReclaimConfig {
        nudge_threshold_tokens: 1_000,
        ..ReclaimConfig::default()
    };
    let harness = Harness::with_reclaim(config, reclaim);
    harness.reduce_tool.set(reduce_tool);
    let messages = session(4);
    let call = Call {
        model: MODEL,
        messages: &messages[..messages.len() - 2],
        now_ms: START_MS,
        usable_window: ROOMY_WINDOW,
        last_usage_tokens: None,
        operator_flush: false,
    };
    let outcome = harness.pass(&call).unwrap();
    nudges(&outcome).into_iter().next().map(|(_, text)| text)
}

#[test]
fn a_model_with_ctx_reduce_is_told_which_tags_to_drop() {
    let mut config = Config::default();
    config.reduction.protected_tags = 2;
    let text = first_nudge(config, true).expect("a nudge past the threshold");
    assert!(text.contains("call ctx_reduce with its tags"), "{text}");
    assert!(text.contains("the largest are §"), "{text}");
}

#[test]
fn nudges_off_means_no_nudge() {
    let mut config = Config::default();
    config.reduction.protected_tags = 2;
    config.reduction.nudges = false;
    assert_eq!(first_nudge(config.clone(), true), None);
    assert_eq!(first_nudge(config, false), None);
}
