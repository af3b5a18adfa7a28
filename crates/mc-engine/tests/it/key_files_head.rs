//! The dreamer's pinned key files reach `m[0]` on the next hard fold only: a pin written in
//! the background changes no byte of a cache hit or a soft bust, and never causes a bust.

use mc_core::head::KeyFile;
use mc_core::pass_plan::PassKind;
use mc_core::{ContentHash, Message, ProjectId};
use mc_store::PinnedFile;

use crate::support::{Call, Harness, MODEL, START_MS, conversation};

fn text_of(message: &Message) -> String {
    mc_core::joined_texts(&message.parts)
}

#[test]
fn a_pin_waits_for_the_next_fold_and_then_shows_in_m0() {
    let harness = Harness::new();
    let project = ProjectId::new("git:abc").unwrap();
    harness.bind_project(&project);
    let messages = conversation(20);
    let call = |end: usize, at: u64, flush: bool| Call {
        model: MODEL,
        messages: &messages[..end],
        now_ms: START_MS + at,
        usable_window: 1_000_000,
        last_usage_tokens: None,
        operator_flush: flush,
    };
    let first = harness.pass(&call(3, 0, false)).unwrap();
    assert!(!text_of(&first.messages[0]).contains("<key-files>"));

    let pin = PinnedFile {
        file: KeyFile {
            path: "src/parser.rs".into(),
            text: "pub fn parse() {}".into(),
            cut_lines: 0,
        },
        reads: 5,
        content_hash: ContentHash::from_bytes([1; 32]),
    };
    harness
        .engine
        .store()
        .write(|tx| tx.replace_key_files(&project, &[pin], START_MS as i64))
        .unwrap();

    let hit = harness.pass(&call(5, 10_000, false)).unwrap();
    assert!(!hit.plan.may_mutate, "{:?}", hit.plan);
    assert_eq!(hit.messages[..first.messages.len()], first.messages[..]);
    let soft = harness.pass(&call(7, 20_000, true)).unwrap();
    assert_eq!(soft.plan.kind, PassKind::SoftBust, "{:?}", soft.plan);
    assert_eq!(soft.messages[0], first.messages[0], "m[0] waits for a fold");

    // Idle past the cache's TTL: the cache is dead anyway, m[0] is rebuilt with the pin.
    let fold = harness.pass(&call(9, 20_000 + 10 * 60_000, false)).unwrap();
    assert_eq!(fold.plan.kind, PassKind::HardFold, "{:?}", fold.plan);
    let m0 = text_of(&fold.messages[0]);
    assert!(
        m0.contains("<file path=\"src/parser.rs\">\npub fn parse() {}\n</file>\n</key-files>"),
        "{m0}"
    );
}
