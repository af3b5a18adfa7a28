//! The compact transcript the historian model reads: one line per message.
//!
//! A line is `#N role: content`, with tool calls as `→ name(input)` and results as
//! `← output`, each cut to a few hundred characters with the size that was cut, thinking left
//! out, and dropped units shown as dropped (the historian summarises what happened, not every
//! byte; the raw log keeps them). Whitespace runs collapse to one space, so a line stays a
//! line. The bytes are pinned by a snapshot test: a change to them changes what every
//! historian run reads.

use std::collections::BTreeSet;

use crate::media::media_label;
use crate::tags::{TagIndex, TagNo, UnitRef};
use crate::{Message, Part, Role, thousands};

/// Characters of a text kept on its line.
const TEXT_CHARS: usize = 600;
/// Characters of a tool call's input kept.
const CALL_CHARS: usize = 160;
/// Characters of a tool result kept.
const RESULT_CHARS: usize = 240;

/// The transcript of `messages` (with their ordinals): one line per message, in order.
/// Units whose tags are in `dropped` show as `[dropped]`.
pub fn render_transcript(
    messages: &[(u64, &Message)],
    tags: &TagIndex,
    dropped: &BTreeSet<TagNo>,
) -> String {
    let mut out = String::new();
    for &(ordinal, message) in messages {
        let mut pieces = Vec::new();
        for (index, part) in message.parts.iter().enumerate() {
            let unit = UnitRef {
                ordinal,
                part: u32::try_from(index).unwrap_or(u32::MAX),
            };
            let is_dropped = tags.tag_of(unit).is_some_and(|tag| dropped.contains(&tag));
            if let Some(piece) = piece(part, is_dropped) {
                pieces.push(piece);
            }
        }
        if pieces.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "#{ordinal} {}: {}\n",
            role_name(message.role),
            pieces.join(" ")
        ));
    }
    out
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => "system",
        Role::Tool => "tool",
    }
}

fn piece(part: &Part, dropped: bool) -> Option<String> {
    match part {
        Part::Text { .. } | Part::ToolResult { .. } if dropped => Some("[dropped]".to_owned()),
        Part::Text { text, .. } => Some(cut(text, TEXT_CHARS)),
        Part::ToolCall { name, input, .. } => {
            Some(format!("→ {name}({})", cut(&input.to_string(), CALL_CHARS)))
        }
        Part::ToolResult {
            content, is_error, ..
        } => {
            let text: String = content
                .iter()
                .filter_map(|inner| match inner {
                    Part::Text { text, .. } => Some(text.clone()),
                    Part::Media { media, source } => Some(media_label(*media, source)),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join(" ");
            let mark = if *is_error { "← error: " } else { "← " };
            Some(format!("{mark}{}", cut(&text, RESULT_CHARS)))
        }
        Part::Media { media, source } => Some(media_label(*media, source)),
        Part::Thinking { .. } | Part::RedactedThinking { .. } | Part::Unknown { .. } => None,
    }
}

/// `text` with whitespace runs collapsed, cut to `limit` characters with the size cut.
fn cut(text: &str, limit: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match collapsed.char_indices().nth(limit) {
        Some((at, _)) => {
            let rest = collapsed[at..].chars().count() as u64;
            format!("{}… [+{} chars]", &collapsed[..at], thousands(rest))
        }
        None => collapsed,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tags::assign_tags;

    #[test]
    fn transcript_snapshot() {
        let messages = vec![
            Message::new(
                Role::User,
                vec![Part::text(
                    "Fix the flaky test in  src/net.rs;\nkeep the API.",
                )],
            ),
            Message::new(
                Role::Assistant,
                vec![
                    Part::Thinking {
                        text: "look first".into(),
                        signature: None,
                    },
                    Part::text("Reading the test."),
                    Part::ToolCall {
                        id: "c1".into(),
                        name: "Read".into(),
                        input: json!({"file_path": "src/net.rs"}),
                    },
                ],
            ),
            Message::new(
                Role::User,
                vec![Part::ToolResult {
                    call_id: "c1".into(),
                    content: vec![Part::text("fn connect() {}\n".repeat(40))],
                    is_error: false,
                }],
            ),
            Message::new(
                Role::User,
                vec![Part::ToolResult {
                    call_id: "c2".into(),
                    content: vec![Part::text("old log")],
                    is_error: true,
                }],
            ),
        ];
        let indexed: Vec<(u64, &Message)> = (10..).zip(&messages).collect();
        let mut next = TagNo(1);
        let mut assigned = Vec::new();
        for &(ordinal, message) in &indexed {
            let new = assign_tags(next, ordinal, message);
            next = new.last().map_or(next, |last| TagNo(last.tag.0 + 1));
            assigned.extend(new);
        }
        let tags = TagIndex::new(assigned);
        let dropped = BTreeSet::from([TagNo(4)]);
        insta::assert_snapshot!(render_transcript(&indexed, &tags, &dropped));
    }

    #[test]
    fn media_shows_as_its_label_never_its_base64() {
        // A PNG header stating 1280×720, as base64.
        let data = "iVBORw0KGgoAAAANSUhEUgAABQAAAALQCAYAAAAAAAAA";
        let image = Part::Media {
            media: crate::MediaKind::Image,
            source: json!({"type": "base64", "media_type": "image/png", "data": data}),
        };
        let messages = [
            Message::new(
                Role::User,
                vec![Part::text("what is wrong here?"), image.clone()],
            ),
            Message::new(
                Role::User,
                vec![Part::ToolResult {
                    call_id: "c1".into(),
                    content: vec![Part::text("shot.png"), image],
                    is_error: false,
                }],
            ),
        ];
        let indexed: Vec<(u64, &Message)> = (0..).zip(&messages).collect();
        let transcript = render_transcript(&indexed, &TagIndex::new(Vec::new()), &BTreeSet::new());
        assert!(transcript.contains("[image 1280×720 png]"), "{transcript}");
        assert!(
            transcript.contains("← shot.png [image 1280×720 png]"),
            "{transcript}"
        );
        assert!(!transcript.contains(data), "{transcript}");
    }
}
