//! Clients whose tool call ids repeat across turns (`call_0` every turn, as some
//! OpenAI-compatible providers emit them).
//!
//! Found by `props::invariants_hold_when_call_ids_repeat_across_turns`: `render_tail` decides
//! "remove the result whole with its call" vs "skeleton" per call *id* over the whole tail,
//! so a later turn that reuses the id flips an old, removed pair back to a skeleton on a
//! cache hit, changing bytes the provider already cached.

use mc_core::config::Config;
use mc_core::pass_plan::PassKind;
use mc_core::{Message, Part, Role};
use serde_json::json;

use crate::examples::ROOMY_WINDOW;
use crate::support::{Call, Harness, MODEL, START_MS};

fn read_turn(path: &str, output: &str) -> [Message; 2] {
    [
        Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: "call_0".into(),
                name: "Read".into(),
                input: json!({"file_path": path}),
            }],
        ),
        Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: "call_0".into(),
                content: vec![Part::text(output)],
                is_error: false,
            }],
        ),
    ]
}

fn call(messages: &[Message], now_ms: u64, operator_flush: bool) -> Call<'_> {
    Call {
        model: MODEL,
        messages,
        now_ms,
        usable_window: ROOMY_WINDOW,
        last_usage_tokens: None,
        operator_flush,
    }
}

#[test]
fn a_reused_call_id_does_not_change_the_cached_prefix() {
    let mut config = Config::default();
    config.reduction.protected_tags = 0;
    config.reduction.drop_skeletons = 0;
    let harness = Harness::with_config(config);
    let mut messages = vec![Message::new(Role::User, vec![Part::text("read the code")])];
    messages.extend(read_turn("src/lib.rs", "fn main() {}"));
    harness.pass(&call(&messages, START_MS, false)).unwrap();
    harness
        .engine
        .queue_drops(&harness.session, "2", "operator", 1)
        .unwrap();
    let landed = harness
        .pass(&call(&messages, START_MS + 1_000, true))
        .unwrap();
    // No skeletons: the result and its call are removed whole; the emptied message says what
    // went, named by the call the result answered (the id is reused, the pairing is not).
    assert_eq!(
        landed.messages[3].parts,
        [Part::text("[dropped §2§: Read src/lib.rs, 1 line]")]
    );

    messages.extend(read_turn("src/main.rs", "mod lib;"));
    let hit = harness
        .pass(&call(&messages, START_MS + 2_000, false))
        .unwrap();
    assert_eq!(hit.plan.kind, PassKind::CacheHit);
    assert_eq!(
        hit.messages[..landed.messages.len()],
        landed.messages[..],
        "a cache hit re-sends the cached prefix unchanged"
    );
}
