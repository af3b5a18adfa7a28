//! Unit tests of [`super::render_tail`] on hand-built tails.

use std::collections::BTreeSet;

use serde_json::json;

use super::{Reshape, render_tail};
use crate::conversation::{MediaKind, Message, Part, Role};
use crate::tags::{TagIndex, TagNo, assign_tags};

fn call(id: &str, command: &str) -> Part {
    Part::ToolCall {
        id: id.into(),
        name: "Bash".into(),
        input: json!({"command": command, "timeout": 5}),
    }
}

fn result(id: &str, content: Vec<Part>) -> Part {
    Part::ToolResult {
        call_id: id.into(),
        content,
        is_error: false,
    }
}

/// A dropped result of `Bash ls` whose output was one line.
fn placeholder_result(id: &str, tag: u32) -> Part {
    result(
        id,
        vec![Part::text(format!("[dropped §{tag}§: Bash ls, 1 line]"))],
    )
}

/// Stores `messages` at ordinals 0.. and tags them like ingest would.
fn ingest(messages: &[Message]) -> (Vec<(u64, &Message)>, TagIndex) {
    let mut next = TagNo(1);
    let mut assigned = Vec::new();
    let mut tail = Vec::new();
    for (ordinal, message) in (0u64..).zip(messages) {
        let new = assign_tags(next, ordinal, message);
        if let Some(last) = new.last() {
            next = TagNo(last.tag.0 + 1);
        }
        assigned.extend(new);
        tail.push((ordinal, message));
    }
    (tail, TagIndex::new(assigned))
}

fn landed(tags: &[u32]) -> BTreeSet<TagNo> {
    tags.iter().copied().map(TagNo).collect()
}

/// user text §1§, assistant text §2§ + two calls, user results §3§ §4§, assistant text §5§.
fn session() -> Vec<Message> {
    let long = "x".repeat(100);
    vec![
        Message::new(Role::User, vec![Part::text("fix it")]),
        Message::new(
            Role::Assistant,
            vec![
                Part::Thinking {
                    text: "plan".into(),
                    signature: Some("sig".into()),
                },
                Part::text("running"),
                call("a", &long),
                call("b", "ls"),
            ],
        ),
        Message::new(
            Role::User,
            vec![
                result("a", vec![Part::text("output a")]),
                result(
                    "b",
                    vec![Part::Media {
                        media: MediaKind::Image,
                        source: json!("data"),
                    }],
                ),
            ],
        ),
        Message::new(Role::Assistant, vec![Part::text("done")]),
    ]
}

#[test]
fn tags_every_taggable_part() {
    let messages = session();
    let (tail, tags) = ingest(&messages);
    let rendered = render_tail(&tail, &tags, &BTreeSet::new(), 20, &Reshape::default());
    assert_eq!(rendered[0].parts, [Part::text("§1§ fix it")]);
    assert_eq!(rendered[1].parts[0], messages[1].parts[0]);
    assert_eq!(rendered[1].parts[1], Part::text("§2§ running"));
    assert_eq!(rendered[1].parts[2..], messages[1].parts[2..]);
    assert_eq!(
        rendered[2].parts,
        [
            result("a", vec![Part::text("§3§ output a")]),
            result(
                "b",
                vec![
                    Part::text("§4§ "),
                    Part::Media {
                        media: MediaKind::Image,
                        source: json!("data")
                    }
                ]
            ),
        ]
    );
    assert_eq!(rendered[3].parts, [Part::text("§5§ done")]);
}

#[test]
fn landed_text_becomes_exactly_the_placeholder() {
    let messages = session();
    let (tail, tags) = ingest(&messages);
    let rendered = render_tail(&tail, &tags, &landed(&[1, 5]), 20, &Reshape::default());
    assert_eq!(rendered[0].parts, [Part::text("[dropped §1§]")]);
    assert_eq!(rendered[3].parts, [Part::text("[dropped §5§]")]);
}

#[test]
fn recent_result_drop_keeps_a_skeleton_call() {
    let messages = session();
    let (tail, tags) = ingest(&messages);
    let rendered = render_tail(&tail, &tags, &landed(&[3]), 20, &Reshape::default());
    let clipped = format!("{}…[+20 chars]", "x".repeat(80));
    assert_eq!(
        rendered[1].parts[2],
        Part::ToolCall {
            id: "a".into(),
            name: "Bash".into(),
            input: json!({"command": clipped, "timeout": 5}),
        }
    );
    assert_eq!(rendered[1].parts[3], messages[1].parts[3]);
    // The placeholder says what went: the call's tool and (clipped) command, and the size.
    let said = format!("[dropped §3§: Bash {}…, 1 line]", "x".repeat(80));
    assert_eq!(rendered[2].parts[0], result("a", vec![Part::text(said)]));
}

#[test]
fn older_result_drops_go_whole_with_their_calls() {
    let messages = session();
    let (tail, tags) = ingest(&messages);
    // One skeleton allowed: §4§ (newest) keeps its call, §3§ goes whole.
    let rendered = render_tail(&tail, &tags, &landed(&[3, 4]), 1, &Reshape::default());
    assert_eq!(rendered[1].parts.len(), 3);
    assert_eq!(rendered[1].parts[2], call("b", "ls"));
    // The dropped result held an image: its placeholder names its call and says so.
    assert_eq!(
        rendered[2].parts,
        [result(
            "b",
            vec![Part::text("[dropped §4§: Bash ls, image url]")]
        )]
    );
    // No skeletons at all: both pairs go, the results message keeps one placeholder.
    let rendered = render_tail(&tail, &tags, &landed(&[3, 4]), 0, &Reshape::default());
    assert_eq!(rendered[1].parts[1..], [Part::text("§2§ running")]);
    let said = format!("[dropped §3§: Bash {}…, 1 line]", "x".repeat(80));
    assert_eq!(rendered[2].parts, [Part::text(said)]);
}

#[test]
fn message_emptied_of_its_calls_keeps_a_placeholder() {
    let messages = vec![
        Message::new(Role::Assistant, vec![call("a", "ls")]),
        Message::new(Role::User, vec![result("a", vec![Part::text("out")])]),
    ];
    let (tail, tags) = ingest(&messages);
    let rendered = render_tail(&tail, &tags, &landed(&[1]), 0, &Reshape::default());
    // Both messages emptied keep one placeholder saying what went.
    let said = Part::text("[dropped §1§: Bash ls, 1 line]");
    assert_eq!(rendered[0].parts, std::slice::from_ref(&said));
    assert_eq!(rendered[1].parts, [said]);
}

#[test]
fn a_call_with_a_surviving_result_is_never_removed() {
    // Two results answer the same call id; only one is dropped, so it is skeletonised.
    let messages = vec![
        Message::new(Role::Assistant, vec![call("a", "ls")]),
        Message::new(
            Role::User,
            vec![
                result("a", vec![Part::text("one")]),
                result("a", vec![Part::text("two")]),
            ],
        ),
    ];
    let (tail, tags) = ingest(&messages);
    let rendered = render_tail(&tail, &tags, &landed(&[1]), 0, &Reshape::default());
    assert_eq!(rendered[0].parts, messages[0].parts);
    assert_eq!(
        rendered[1].parts,
        [
            placeholder_result("a", 1),
            result("a", vec![Part::text("§2§ two")])
        ]
    );
}

#[test]
fn a_result_whose_call_is_outside_the_tail_is_removed_alone() {
    let messages = vec![
        Message::new(Role::Assistant, vec![call("a", "ls")]),
        Message::new(
            Role::User,
            vec![result("a", vec![Part::text("out")]), Part::text("next")],
        ),
    ];
    let (tail, tags) = ingest(&messages);
    let rendered = render_tail(&tail[1..], &tags, &landed(&[1]), 0, &Reshape::default());
    assert_eq!(
        rendered,
        [Message::new(Role::User, vec![Part::text("§2§ next")])]
    );
}

#[test]
fn rendering_is_deterministic_and_leaves_input_alone() {
    let messages = session();
    let before = messages.clone();
    let (tail, tags) = ingest(&messages);
    let first = render_tail(&tail, &tags, &landed(&[1, 3]), 0, &Reshape::default());
    let second = render_tail(&tail, &tags, &landed(&[1, 3]), 0, &Reshape::default());
    assert_eq!(first, second);
    assert_eq!(messages, before);
}

#[test]
fn reshaped_units_keep_their_tags_pairs_and_places() {
    let log: String = (0..400)
        .map(|line| format!("output line {line}\n"))
        .collect();
    let messages = vec![
        Message::new(Role::User, vec![Part::text(log.clone())]),
        Message::new(
            Role::Assistant,
            vec![call("a", &"y".repeat(500)), call("b", "ls")],
        ),
        Message::new(
            Role::User,
            vec![
                result("a", vec![Part::text(log.clone())]),
                result("b", vec![]),
            ],
        ),
    ];
    let (tail, tags) = ingest(&messages);
    let mut reshape = Reshape::default();
    reshape.excerpts.insert(TagNo(1), 400);
    reshape.excerpts.insert(TagNo(2), 400);
    reshape.clipped_calls.insert(crate::tags::UnitRef {
        ordinal: 1,
        part: 0,
    });
    let rendered = render_tail(&tail, &tags, &BTreeSet::new(), 20, &reshape);
    let Part::Text { text, .. } = &rendered[0].parts[0] else {
        panic!("a text stays a text");
    };
    assert!(text.starts_with("§1§ output line 0\n"));
    assert!(text.contains("[§1§ excerpt: "));
    assert!(text.ends_with("output line 399\n"));
    assert!(text.len() < log.len() / 4);
    // The clipped call keeps its id and name, the other call is untouched.
    let clipped = format!("{}…[+420 chars]", "y".repeat(80));
    assert_eq!(
        rendered[1].parts,
        [
            Part::ToolCall {
                id: "a".into(),
                name: "Bash".into(),
                input: json!({"command": clipped, "timeout": 5}),
            },
            call("b", "ls"),
        ]
    );
    // The excerpted result still answers its call, tagged; the empty one is untouched.
    let Part::ToolResult {
        call_id, content, ..
    } = &rendered[2].parts[0]
    else {
        panic!("a result stays a result");
    };
    assert_eq!(call_id, "a");
    let Part::Text { text, .. } = &content[0] else {
        panic!("its text stays text");
    };
    assert!(text.starts_with("§2§ output line 0\n") && text.contains("[§2§ excerpt: "));
    assert_eq!(rendered[2].parts[1], result("b", vec![Part::text("§3§ ")]));
}

#[test]
fn a_pasted_image_is_shown_untouched_never_excerpted_and_dropped_with_a_label() {
    // A PNG header stating 1280×720, as base64.
    let image = Part::Media {
        media: MediaKind::Image,
        source: json!({"type": "base64", "media_type": "image/png",
            "data": "iVBORw0KGgoAAAANSUhEUgAABQAAAALQCAYAAAAAAAAA"}),
    };
    let messages = vec![
        Message::new(Role::User, vec![Part::text("fix the layout")]),
        Message::new(Role::Assistant, vec![Part::text("which page?")]),
        Message::new(Role::User, vec![Part::text("this one"), image.clone()]),
    ];
    let (tail, tags) = ingest(&messages);
    // §3§ is the text, §4§ the image: tagged, shown as sent.
    let shown = render_tail(&tail, &tags, &BTreeSet::new(), 20, &Reshape::default());
    assert_eq!(shown[2].parts, [Part::text("§3§ this one"), image.clone()]);
    // An excerpt decision cannot cut it.
    let mut reshape = Reshape::default();
    reshape.excerpts.insert(TagNo(4), 400);
    let excerpted = render_tail(&tail, &tags, &BTreeSet::new(), 20, &reshape);
    assert_eq!(excerpted[2].parts[1], image);
    // Dropped, it leaves a placeholder that says what it was.
    let dropped = render_tail(&tail, &tags, &landed(&[4]), 20, &Reshape::default());
    assert_eq!(
        dropped[2].parts,
        [
            Part::text("§3§ this one"),
            Part::text("[dropped §4§: image 1280×720 png]")
        ]
    );
}

/// A read and a shell run, both landed: the skeleton's result and the message emptied by the
/// older pair's removal each say what went (tool, main argument, size).
#[test]
fn labelled_placeholders_snapshot() {
    let messages = vec![
        Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: "r".into(),
                name: "Read".into(),
                input: json!({"file_path": "src/card_parser.py", "offset": 1}),
            }],
        ),
        Message::new(
            Role::User,
            vec![result(
                "r",
                vec![Part::text("def parse_card():\n    pass\n")],
            )],
        ),
        Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: "b".into(),
                name: "Bash".into(),
                input: json!({"command": "pytest -k rounding\necho done", "timeout": 60}),
            }],
        ),
        Message::new(Role::User, vec![result("b", vec![Part::text("1 passed")])]),
    ];
    let (tail, tags) = ingest(&messages);
    let rendered = render_tail(&tail, &tags, &landed(&[1, 2]), 1, &Reshape::default());
    let texts: Vec<String> = rendered
        .iter()
        .map(|message| serde_json::to_string(&message.parts).unwrap())
        .collect();
    insta::assert_snapshot!(texts.join("\n"));
}
