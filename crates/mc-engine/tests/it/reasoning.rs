//! Old reasoning is dropped on busts, but never so that a message ends up empty.
//!
//! Found by `props::invariants_hold_with_small_protection`: an assistant message of thinking
//! plus tool calls whose results were all dropped long ago renders as thinking alone
//! (`render_tail` removed the calls whole), then the old-reasoning lane removes the thinking
//! too, because it judged "has other content" on the stored message, not the rendered one.

use mc_core::config::Config;
use mc_core::{Message, Part, Role};
use serde_json::json;

use crate::examples::ROOMY_WINDOW;
use crate::support::{Call, Harness, MODEL, START_MS};

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

/// Task (§1§); an assistant message of thinking and one call; its result (§2§); then five
/// exchanges of text, so that turn is old and no longer the current one.
fn session() -> Vec<Message> {
    let mut messages = vec![
        Message::new(Role::User, vec![Part::text("look at the build")]),
        Message::new(
            Role::Assistant,
            vec![
                Part::Thinking {
                    text: "the build log will say".into(),
                    signature: Some("sig".into()),
                },
                Part::ToolCall {
                    id: "toolu_1".into(),
                    name: "Bash".into(),
                    input: json!({"command": "cargo build"}),
                },
            ],
        ),
        Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: "toolu_1".into(),
                content: vec![Part::text("error: could not compile")],
                is_error: true,
            }],
        ),
    ];
    for turn in 0..5 {
        messages.push(Message::new(
            Role::Assistant,
            vec![Part::text(format!("step {turn}"))],
        ));
        messages.push(Message::new(
            Role::User,
            vec![Part::text(format!("go on {turn}"))],
        ));
    }
    messages
}

#[test]
fn dropping_old_reasoning_never_leaves_an_empty_message() {
    let mut config = Config::default();
    config.reduction.protected_tags = 0;
    config.reduction.drop_skeletons = 0;
    let harness = Harness::with_config(config);
    let messages = session();
    // The first render folds: the errored result (§2§, 5 turns old) lands with it, and no
    // skeleton is kept, so its call goes too; the thinking beside it is old reasoning.
    let outcome = harness.pass(&call(&messages, START_MS)).unwrap();
    assert_eq!(outcome.landed, [mc_core::tags::TagNo(2)]);
    for (index, message) in outcome.messages.iter().enumerate() {
        assert!(
            !message.parts.is_empty(),
            "message {index} is empty: {:#?}",
            outcome.messages
        );
    }
}
