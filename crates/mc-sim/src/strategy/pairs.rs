//! Where a conversation may be cut without splitting a tool call from its result.

use std::collections::HashSet;

use mc_core::{Message, Role};

/// How many messages at the head are system messages: instructions every strategy keeps in
/// place (mini-swe-agent's and OpenAI clients' system prompts travel as the first message).
pub(super) fn head_len(messages: &[Message]) -> usize {
    messages
        .iter()
        .take_while(|message| message.role == Role::System)
        .count()
}

/// For each message, whether the conversation may start there once everything before it is
/// dropped: the message is a user or assistant turn, and every tool result from there on
/// answers a call made from there on. Cutting anywhere else would split a call from its
/// result or open with an orphan result, which the provider rejects.
///
/// Assistant turns count as starts because agent sessions are mostly tool loops with a user
/// turn only at the top: with user turns alone there would be nowhere to cut. A strategy
/// that opens with an assistant turn puts a user turn before it (see [`super::Window`]).
pub fn valid_starts(messages: &[Message]) -> Vec<bool> {
    let mut valid = vec![false; messages.len()];
    let mut unanswered_results: HashSet<&str> = HashSet::new();
    for (index, message) in messages.iter().enumerate().rev() {
        unanswered_results.extend(message.tool_result_ids());
        for call in message.tool_call_ids() {
            unanswered_results.remove(call);
        }
        let is_turn = matches!(message.role, Role::User | Role::Assistant);
        valid[index] = is_turn && unanswered_results.is_empty();
    }
    valid
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::test_support::{assistant_calls, system, tool_results, user};

    #[test]
    fn cuts_only_at_user_turns_outside_tool_pairs() {
        let messages = vec![
            system("be brief"),
            user("go"),
            assistant_calls(&["a", "b"]),
            tool_results(&["a", "b"]),
            assistant_calls(&["c"]),
            tool_results(&["c"]),
            user("thanks"),
        ];
        assert_eq!(
            valid_starts(&messages),
            vec![false, true, true, false, true, false, true]
        );
        assert_eq!(head_len(&messages), 1);
    }

    #[test]
    fn a_result_answering_an_earlier_pair_blocks_the_cut() {
        // The result of `a` arrives after a user interjection: cutting at the interjection
        // would orphan it.
        let messages = vec![
            user("go"),
            assistant_calls(&["a"]),
            user("also check b"),
            tool_results(&["a"]),
        ];
        assert_eq!(valid_starts(&messages), vec![true, true, false, false]);
    }
}
