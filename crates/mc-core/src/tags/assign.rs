//! Assigning numbers to the taggable parts of a newly stored message.

use crate::conversation::{Message, Part};

use super::number::{TagAssignment, TagNo, UnitRef};

/// Whether a part carries a tag.
///
/// Text and tool results are what the model may want to drop, so they carry numbers. So does
/// media (a pasted screenshot is over a thousand tokens, and an old one is dropped like stale
/// tool output), though it is shown untouched while visible: no prefix can go inside an
/// image. Calls are dropped together with their results; thinking is signed by some
/// providers and must stay byte-identical; unknown blocks are passed through untouched.
pub fn is_taggable(part: &Part) -> bool {
    match part {
        Part::Text { .. } | Part::ToolResult { .. } | Part::Media { .. } => true,
        Part::ToolCall { .. }
        | Part::Thinking { .. }
        | Part::RedactedThinking { .. }
        | Part::Unknown { .. } => false,
    }
}

/// Numbers the taggable parts of the message stored at `ordinal`: `next`, `next + 1`, … in
/// part order.
///
/// Called exactly once per message at ingest; the result is persisted and never recomputed,
/// which is what keeps a unit's number stable. Numbering stops (rather than wrapping or
/// panicking) if it would pass `u32::MAX` or a part index would not fit a `u32`.
pub fn assign_tags(next: TagNo, ordinal: u64, message: &Message) -> Vec<TagAssignment> {
    let mut assignments = Vec::new();
    let mut tag = Some(next);
    for (index, part) in message.parts.iter().enumerate() {
        if !is_taggable(part) {
            continue;
        }
        let (Some(current), Ok(part)) = (tag, u32::try_from(index)) else {
            break;
        };
        assignments.push(TagAssignment {
            tag: current,
            unit: UnitRef { ordinal, part },
        });
        tag = current.next();
    }
    assignments
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Role;
    use serde_json::json;

    #[test]
    fn numbers_taggable_parts_in_order() {
        let message = Message::new(
            Role::Assistant,
            vec![
                Part::Thinking {
                    text: "hmm".into(),
                    signature: None,
                },
                Part::text("a"),
                Part::ToolCall {
                    id: "c".into(),
                    name: "Bash".into(),
                    input: json!({}),
                },
                Part::ToolResult {
                    call_id: "c".into(),
                    content: vec![],
                    is_error: false,
                },
            ],
        );
        let unit = |part| UnitRef { ordinal: 4, part };
        assert_eq!(
            assign_tags(TagNo(10), 4, &message),
            vec![
                TagAssignment {
                    tag: TagNo(10),
                    unit: unit(1)
                },
                TagAssignment {
                    tag: TagNo(11),
                    unit: unit(3)
                },
            ]
        );
    }

    #[test]
    fn stops_at_the_end_of_the_number_space() {
        let message = Message::new(Role::User, vec![Part::text("a"), Part::text("b")]);
        let assigned = assign_tags(TagNo(u32::MAX), 0, &message);
        assert_eq!(assigned.len(), 1);
    }
}
