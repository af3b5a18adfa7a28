//! The rendered upstream conversation of a small fixed session after a drop landed: pins the
//! bytes of m[0], m[1], the tags of the tail, the placeholder and the skeleton call.

use mc_core::config::Config;
use mc_core::pass_plan::PassKind;
use mc_core::tags::TagNo;
use serde_json::json;

use crate::examples::{ROOMY_WINDOW, bash_session};
use crate::support::{Call, Harness, MODEL, START_MS};

#[test]
fn rendered_conversation_after_a_drop_landed() {
    // Two protected tags keep the fixture small: the newest two units stay untouchable.
    let mut config = Config::default();
    config.reduction.protected_tags = 2;
    let harness = Harness::with_config(config);
    let messages = bash_session(2); // tags 1..=5
    let call = |operator_flush, now_ms| Call {
        model: MODEL,
        messages: &messages,
        now_ms,
        usable_window: ROOMY_WINDOW,
        last_usage_tokens: None,
        operator_flush,
    };
    harness.pass(&call(false, START_MS)).unwrap();
    let queued = harness
        .engine
        .queue_drops(&harness.session, "2-3,5", "operator", 1)
        .unwrap();
    assert_eq!(queued.waiting().collect::<Vec<_>>(), [TagNo(5)]);

    let outcome = harness.pass(&call(true, START_MS + 10_000)).unwrap();
    assert_eq!(outcome.plan.kind, PassKind::SoftBust);
    assert_eq!(outcome.landed, [TagNo(2), TagNo(3)]);
    let rendered = json!({
        "messages": outcome.messages,
        "breakpoints": outcome.breakpoints,
    });
    insta::assert_snapshot!(serde_json::to_string_pretty(&rendered).unwrap());
}
