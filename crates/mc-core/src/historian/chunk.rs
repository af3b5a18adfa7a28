//! Which raw history the historian summarises next.

use std::collections::HashMap;

use crate::{Message, Part, Role};

/// An inclusive ordinal range of the raw log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// First ordinal.
    pub start: u64,
    /// Last ordinal (inclusive).
    pub end: u64,
}

/// The chunk to summarise: from `boundary` (the first ordinal not yet summarised) up to the
/// protected live tail (messages from `live_from` on are never summarised), at most as many
/// messages as fit `max_tokens` (`tokens` per message; always at least one clean stretch),
/// ending where no tool call is separated from its result, and only once the eligible
/// history reaches `trigger_tokens` (see [`super::trigger_tokens`]). The budget never ends
/// the chunk before `reach` (an ordinal a run already read to: reading it again must read
/// past it), so the chunk then reaches the first clean end after it, if there is one.
///
/// `messages` is the session's log from ordinal 0 (a call answered after the chunk may have
/// been made before it).
pub fn eligible_chunk(
    messages: &[Message],
    boundary: u64,
    live_from: u64,
    trigger_tokens: u64,
    max_tokens: u64,
    reach: u64,
    tokens: &dyn Fn(u64) -> u64,
) -> Option<Chunk> {
    let end_excl = live_from.min(messages.len() as u64);
    if boundary >= end_excl {
        return None;
    }
    let eligible: u64 = (boundary..end_excl).map(tokens).sum();
    if eligible < trigger_tokens.max(1) {
        return None;
    }
    let budget_tokens = max_tokens.max(trigger_tokens);
    let clean = clean_ends(messages);
    let mut used = 0_u64;
    let mut last = None;
    for ordinal in boundary..end_excl {
        used = used.saturating_add(tokens(ordinal));
        if used > budget_tokens && last.is_some_and(|last| last >= reach) {
            break;
        }
        if usize::try_from(ordinal)
            .ok()
            .and_then(|at| clean.get(at))
            .is_some_and(|&clean| clean)
        {
            last = Some(ordinal);
        }
    }
    last.map(|end| Chunk {
        start: boundary,
        end,
    })
}

/// Whether `message` is the user typing: a user message with text and no tool result (a
/// tool's result, even with text beside it, continues the turn the model is in).
pub fn starts_a_turn(message: &Message) -> bool {
    message.role == Role::User
        && message
            .parts
            .iter()
            .any(|part| matches!(part, Part::Text { .. }))
        && !message
            .parts
            .iter()
            .any(|part| matches!(part, Part::ToolResult { .. }))
}

/// For each message, whether a chunk may end after it: no call in it or before it is
/// answered after it.
///
/// One pass over the log: a call id is open from its first call (in an assistant message)
/// until its last result, and an end is clean where no id is open. Asked message by message
/// against the whole log, the same question cost the session's length squared on every
/// historian check, and a long session checks after every request.
fn clean_ends(messages: &[Message]) -> Vec<bool> {
    let mut spans: HashMap<&str, (Option<usize>, Option<usize>)> = HashMap::new();
    for (at, message) in messages.iter().enumerate() {
        for part in &message.parts {
            match part {
                Part::ToolCall { id, .. } if message.role == Role::Assistant => {
                    let span = spans.entry(id.as_str()).or_default();
                    span.0 = Some(span.0.map_or(at, |first| first.min(at)));
                }
                Part::ToolResult { call_id, .. } => {
                    let span = spans.entry(call_id.as_str()).or_default();
                    span.1 = Some(span.1.map_or(at, |last| last.max(at)));
                }
                _ => {}
            }
        }
    }
    // +1 where a span opens, -1 where it closes; an end is clean where the sum is 0.
    let mut opened = vec![0_i64; messages.len() + 1];
    for (first_call, last_result) in spans.into_values() {
        if let (Some(call), Some(result)) = (first_call, last_result)
            && call < result
        {
            opened[call] += 1;
            opened[result] -= 1;
        }
    }
    let mut open = 0_i64;
    opened[..messages.len()]
        .iter()
        .map(|delta| {
            open += delta;
            open == 0
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// The former per-message question, kept as the reference [`clean_ends`] must equal.
    fn ends_cleanly(messages: &[Message], ordinal: usize) -> bool {
        let (before, after) = messages.split_at(ordinal + 1);
        let answered_later: Vec<&str> = after
            .iter()
            .flat_map(|message| &message.parts)
            .filter_map(|part| match part {
                Part::ToolResult { call_id, .. } => Some(call_id.as_str()),
                _ => None,
            })
            .collect();
        !before
            .iter()
            .filter(|message| message.role == Role::Assistant)
            .flat_map(|message| &message.parts)
            .any(|part| matches!(part, Part::ToolCall { id, .. } if answered_later.contains(&id.as_str())))
    }

    fn arb_message() -> impl Strategy<Value = Message> {
        let part = prop_oneof![
            (0..4_u8).prop_map(|id| Part::ToolCall {
                id: format!("c{id}"),
                name: "Bash".into(),
                input: json!({}),
            }),
            (0..4_u8).prop_map(|id| Part::ToolResult {
                call_id: format!("c{id}"),
                content: vec![Part::text("out")],
                is_error: false,
            }),
            Just(Part::text("words")),
        ];
        (any::<bool>(), proptest::collection::vec(part, 0..3)).prop_map(|(user, parts)| {
            Message::new(if user { Role::User } else { Role::Assistant }, parts)
        })
    }

    proptest! {
        /// Calls and results in any order, repeated ids, results before their calls: one
        /// pass answers what asking message by message answered.
        #[test]
        fn clean_ends_answer_as_each_end_asked_alone(
            messages in proptest::collection::vec(arb_message(), 0..14)
        ) {
            let expected: Vec<bool> =
                (0..messages.len()).map(|at| ends_cleanly(&messages, at)).collect();
            prop_assert_eq!(clean_ends(&messages), expected);
        }
    }

    fn turn(id: &str) -> [Message; 2] {
        [
            Message::new(
                Role::Assistant,
                vec![Part::ToolCall {
                    id: id.into(),
                    name: "Bash".into(),
                    input: json!({"command": "ls"}),
                }],
            ),
            Message::new(
                Role::User,
                vec![Part::ToolResult {
                    call_id: id.into(),
                    content: vec![Part::text("a b c")],
                    is_error: false,
                }],
            ),
        ]
    }

    fn session() -> Vec<Message> {
        let mut messages = vec![Message::new(Role::User, vec![Part::text("task")])];
        for index in 0..10 {
            messages.extend(turn(&format!("c{index}")));
        }
        messages
    }

    #[test]
    fn a_chunk_ends_between_a_result_and_the_next_call_within_the_budget() {
        let messages = session();
        let tokens = |_: u64| 100;
        // 21 messages, the live tail from 15: 1,500 tokens eligible.
        let chunk = eligible_chunk(&messages, 0, 15, 1_000, 1_000, 0, &tokens).unwrap();
        // Ten messages fit the budget (0..=9); 9 is a call answered by 10, so the chunk ends
        // at the result before it.
        assert_eq!(chunk, Chunk { start: 0, end: 8 });
        // The next chunk starts where this one ended.
        let next = eligible_chunk(&messages, 9, 21, 500, 500, 0, &tokens).unwrap();
        assert_eq!(next, Chunk { start: 9, end: 12 });
    }

    #[test]
    fn nothing_is_summarised_below_the_trigger_or_inside_the_live_tail() {
        let messages = session();
        let tokens = |_: u64| 100;
        assert_eq!(
            eligible_chunk(&messages, 0, 5, 1_000, 1_000, 0, &tokens),
            None
        );
        assert_eq!(eligible_chunk(&messages, 15, 15, 10, 10, 0, &tokens), None);
        // Past the trigger, the chunk is bounded by the larger maximum.
        let big = eligible_chunk(&messages, 0, 21, 500, 2_000, 0, &tokens).unwrap();
        assert_eq!(big, Chunk { start: 0, end: 18 });
    }

    #[test]
    fn a_chunk_read_again_reaches_past_what_was_read_whatever_the_budget() {
        let messages = session();
        let tokens = |_: u64| 100;
        // The budget alone stops at 8 (as above); a run already read to 10, so the chunk
        // goes on to the first clean end after it.
        let again = eligible_chunk(&messages, 0, 21, 1_000, 1_000, 10, &tokens).unwrap();
        assert_eq!(again, Chunk { start: 0, end: 10 });
        // With no clean end past it before the live tail, the chunk ends where it can.
        let short = eligible_chunk(&messages, 0, 12, 100, 1_000, 11, &tokens).unwrap();
        assert_eq!(short, Chunk { start: 0, end: 10 });
    }

    #[test]
    fn the_user_typing_starts_a_turn_and_a_tool_result_does_not() {
        let [call, result] = turn("c");
        assert!(starts_a_turn(&Message::new(
            Role::User,
            vec![Part::text("now the docs")]
        )));
        assert!(!starts_a_turn(&result));
        assert!(!starts_a_turn(&call));
        let mut with_text = result;
        with_text.parts.push(Part::text("[interrupted]"));
        assert!(!starts_a_turn(&with_text));
    }
}
