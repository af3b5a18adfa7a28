use std::collections::BTreeSet;

use mc_core::historian::{
    Chunk, StorySoFar, historian_user_message, parse_answer, render_transcript, validate,
};
use mc_core::tags::{TagIndex, TagNo, assign_tags};
use mc_core::{MediaKind, Message, Part, Role};
use proptest::prelude::*;
use serde_json::json;

use super::*;

/// Renders `messages` from ordinal `start` with the real renderer, dropping the units whose
/// tags are in `dropped`, and wraps it as the historian's user message.
fn historian_message(
    start: u64,
    messages: &[Message],
    dropped: &BTreeSet<TagNo>,
) -> (Chunk, String) {
    let indexed: Vec<(u64, &Message)> = (start..).zip(messages).collect();
    let mut next = TagNo(1);
    let mut assigned = Vec::new();
    for &(ordinal, message) in &indexed {
        let new = assign_tags(next, ordinal, message);
        next = new.last().map_or(next, |last| TagNo(last.tag.0 + 1));
        assigned.extend(new);
    }
    let transcript = render_transcript(&indexed, &TagIndex::new(assigned), dropped);
    let chunk = Chunk {
        start,
        end: start + messages.len() as u64 - 1,
    };
    // Earlier episodes and memories come first, as the historian sends them; the reader
    // takes the transcript from its header on.
    let episodes = vec!["0-9 Set the project up".to_owned()];
    let memories = vec!["[NAMING] Transcript of ordinals 1 to 2: is a header".to_owned()];
    let story = StorySoFar {
        episodes: &episodes,
        memories: &memories,
    };
    (chunk, historian_user_message(chunk, &transcript, story))
}

fn call(id: &str, name: &str, input: serde_json::Value) -> Message {
    Message::new(
        Role::Assistant,
        vec![Part::ToolCall {
            id: id.into(),
            name: name.into(),
            input,
        }],
    )
}

fn result(id: &str, text: &str, is_error: bool) -> Message {
    Message::new(
        Role::User,
        vec![Part::ToolResult {
            call_id: id.into(),
            content: vec![Part::text(text)],
            is_error,
        }],
    )
}

fn small_session() -> Vec<Message> {
    vec![
        Message::new(
            Role::User,
            vec![Part::text(
                "The retry test in src/net.rs is flaky. Always run cargo fmt before committing.",
            )],
        ),
        Message::new(
            Role::Assistant,
            vec![
                Part::text("Reading the test first."),
                Part::ToolCall {
                    id: "c1".into(),
                    name: "Read".into(),
                    input: json!({"file_path": "src/net.rs"}),
                },
            ],
        ),
        result("c1", &"fn retry() { sleep(10); }\n".repeat(12), false),
        call("c2", "Bash", json!({"command": "cargo test retry"})),
        result("c2", "test retry ... FAILED: timed out after 10ms", true),
        call(
            "c3",
            "Edit",
            json!({"file_path": "src/net.rs", "old_string": "sleep(10)", "new_string": "sleep(50)"}),
        ),
        result("c3", "ok", false),
        call("c4", "Bash", json!({"command": "cargo test retry"})),
        result("c4", "test retry ... ok", false),
        Message::new(
            Role::User,
            vec![Part::text("Now add a --json flag to status.")],
        ),
        Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: "c5".into(),
                name: "Edit".into(),
                input: json!({"file_path": "src/status.rs", "old_string": "a", "new_string": "b"}),
            }],
        ),
        result("c5", "ok", false),
    ]
}

#[test]
fn answer_snapshot() {
    let (chunk, message) = historian_message(20, &small_session(), &BTreeSet::new());
    let answer = historian_answer(&message).unwrap();
    let output = parse_answer(&answer).unwrap();
    let kept = validate(&output, chunk, 0).unwrap();
    // Lookahead 0 still holds the last compartment back: it ends at the chunk's end.
    assert!(kept.held_back);
    assert_eq!(
        output
            .compartments
            .iter()
            .map(|c| (c.start_ordinal, c.end_ordinal))
            .collect::<Vec<_>>(),
        [(20, 28), (29, 31)]
    );
    insta::assert_snapshot!(serde_json::to_string_pretty(&answer).unwrap());
}

#[test]
fn an_empty_transcript_still_covers_its_chunk() {
    let thinking = Message::new(
        Role::Assistant,
        vec![Part::Thinking {
            text: "hmm".into(),
            signature: None,
        }],
    );
    let (chunk, message) = historian_message(7, &[thinking.clone(), thinking], &BTreeSet::new());
    let output = parse_answer(&historian_answer(&message).unwrap()).unwrap();
    assert!(validate(&output, chunk, 0).is_ok());
    assert_eq!(output.compartments[0].title, "Messages 7–8");
    assert!(output.facts.is_empty());
}

#[test]
fn condensed_is_about_a_twelfth_of_the_transcript_and_capped() {
    let mut messages = vec![Message::new(
        Role::User,
        vec![Part::text("survey the crate")],
    )];
    for index in 0..30 {
        let id = format!("c{index}");
        messages.push(call(
            &id,
            "Read",
            json!({"file_path": format!("src/m{index}.rs")}),
        ));
        messages.push(result(
            &id,
            &"pub fn item() -> u32 { 42 }\n".repeat(20),
            false,
        ));
    }
    let (_, message) = historian_message(0, &messages, &BTreeSet::new());
    let transcript_chars = message.chars().count();
    let output = parse_answer(&historian_answer(&message).unwrap()).unwrap();
    let condensed: usize = output
        .compartments
        .iter()
        .map(|c| c.condensed.chars().count())
        .sum();
    assert!(
        condensed > transcript_chars / 18 && condensed <= transcript_chars / 12 + 150,
        "{condensed} of {transcript_chars}"
    );
    for compartment in &output.compartments {
        assert!(compartment.condensed.chars().count() <= 800);
        assert_eq!(compartment.episode, "research");
    }
}

#[test]
fn output_tokens_and_latency() {
    let answer = json!({"compartments": []});
    let chars = |text: &str| text.chars().count() as u64;
    assert_eq!(historian_output_tokens(&answer, &chars), 19);
    assert_eq!(historian_latency_ms(0), 1_500);
    assert_eq!(historian_latency_ms(800), 11_500);
}

/// Texts that stress the reader: the renderer's own markers, line breaks, other scripts.
fn arb_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,40}",
        ".{0,80}",
        Just("#3 user: → Read(x) ← error: y\n#4 assistant: [dropped]".to_owned()),
        Just("Never push to main. You must always sign commits! ok?".to_owned()),
        "[a-z]{1,8}( [a-z]{1,8}){50,150}",
        Just(String::new()),
    ]
}

fn arb_part() -> impl Strategy<Value = Part> {
    prop_oneof![
        4 => arb_text().prop_map(Part::text),
        2 => ("[A-Za-z_ ()→]{0,12}", arb_text(), arb_text()).prop_map(|(name, path, command)| {
            Part::ToolCall {
                id: "id".into(),
                name,
                input: json!({"file_path": path, "command": command}),
            }
        }),
        3 => (arb_text(), any::<bool>()).prop_map(|(text, is_error)| Part::ToolResult {
            call_id: "id".into(),
            content: vec![Part::text(text)],
            is_error,
        }),
        1 => arb_text().prop_map(|text| Part::Thinking { text, signature: None }),
        1 => Just(Part::Media { media: MediaKind::Image, source: json!({}) }),
    ]
}

fn arb_message() -> impl Strategy<Value = Message> {
    let role = prop_oneof![
        4 => Just(Role::User),
        4 => Just(Role::Assistant),
        1 => Just(Role::System),
        1 => Just(Role::Tool),
    ];
    (role, prop::collection::vec(arb_part(), 0..4))
        .prop_map(|(role, parts)| Message::new(role, parts))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Whatever conversation the renderer turns into a transcript, the simulated historian's
    /// answer reads back and passes validation, with every tier within its size.
    #[test]
    fn answers_to_rendered_transcripts_pass_validation(
        start in 0..10_000u64,
        messages in prop::collection::vec(arb_message(), 1..120),
        dropped in prop::collection::btree_set(1..200u32, 0..30),
    ) {
        let dropped: BTreeSet<TagNo> = dropped.into_iter().map(TagNo).collect();
        let (chunk, message) = historian_message(start, &messages, &dropped);
        let answer = historian_answer(&message)
            .ok_or_else(|| TestCaseError::fail("no answer to a rendered transcript"))?;
        let output = parse_answer(&answer).map_err(TestCaseError::fail)?;
        let checked = validate(&output, chunk, 0);
        prop_assert!(checked.is_ok(), "{:?}", checked);
        for compartment in &output.compartments {
            prop_assert!(!compartment.title.contains('\n'));
            prop_assert!(compartment.condensed.chars().count() <= 800);
            prop_assert!(compartment.line.chars().count() <= 100);
        }
    }
}
