//! Whether a conversation is a client's own continuation of an earlier one.
//!
//! A host that compacts by itself (Claude Code's `/compact` and its automatic compaction,
//! OpenCode's, Codex's and Pi's summaries) goes on with a new history that opens with its summary
//! of the old one. The summary paraphrases: the user's own words, the files and the names
//! of the earlier conversation are gone from every later request. The proxy saw that
//! conversation, so a session that starts this way can carry what the earlier one held
//! (see [`crate::head::render_earlier`]); this module recognises the start, by the fixed text
//! each host writes there.

use crate::{Message, Role, user_words};

/// How each host opens the history it continues with after compacting, as the start of one
/// of the user's texts.
const SUMMARY_OPENINGS: &[&str] = &[
    // Claude Code.
    "This session is being continued from a previous conversation",
    // Codex, in the user message holding its handoff summary.
    "Another language model started to solve this problem and produced a summary",
    // Pi.
    "The conversation history before this point was compacted into the following summary",
];

/// The whole first user text OpenCode continues with, its summary following as the
/// assistant's answer.
const OPENCODE_SUMMARY_QUESTION: &str = "What did we do so far?";

/// The user messages, from the start, among which a host puts its summary (Codex keeps the
/// original task and its environment message before it).
const LOOKED_AT_USER_MESSAGES: usize = 3;

/// How a host's request for its summary opens, as the start of the last user text of the
/// conversation it summarises.
const SUMMARY_REQUESTS: &[&str] = &[
    // Claude Code.
    "Your task is to create a detailed summary of the conversation so far",
    // Codex.
    "You are performing a CONTEXT CHECKPOINT COMPACTION",
];

/// Whether `messages` end with the host asking for its summary of them: that request's
/// conversation is the one it summarises plus the request, not the conversation a later
/// continuation carries.
pub fn asks_for_summary(messages: &[Message]) -> bool {
    messages.last().is_some_and(|last| {
        user_words(last).iter().any(|text| {
            SUMMARY_REQUESTS
                .iter()
                .any(|opening| text.starts_with(opening))
        })
    })
}

/// Whether `messages` open the way a host continues a conversation it compacted.
///
/// ```
/// use mc_core::{Message, Part, Role, continues_compacted};
///
/// let summary = "This session is being continued from a previous conversation that ran out \
///                of context. The conversation is summarized below: …";
/// let continued = [Message::new(Role::User, vec![Part::text(summary)])];
/// assert!(continues_compacted(&continued));
/// let fresh = [Message::new(Role::User, vec![Part::text("fix the flaky test")])];
/// assert!(!continues_compacted(&fresh));
/// ```
pub fn continues_compacted(messages: &[Message]) -> bool {
    let mut users = messages
        .iter()
        .filter(|message| message.role == Role::User)
        .take(LOOKED_AT_USER_MESSAGES)
        .map(user_words);
    let Some(first) = users.next() else {
        return false;
    };
    if first.len() == 1 && first[0] == OPENCODE_SUMMARY_QUESTION {
        return true;
    }
    std::iter::once(first).chain(users).any(|texts| {
        texts.iter().any(|text| {
            SUMMARY_OPENINGS
                .iter()
                .any(|opening| text.starts_with(opening))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Part;

    fn user(texts: &[&str]) -> Message {
        Message::new(
            Role::User,
            texts.iter().map(|text| Part::text(*text)).collect(),
        )
    }

    #[test]
    fn a_summary_request_is_the_last_user_text_only() {
        let request = user(&[
            "Your task is to create a detailed summary of the conversation so far, paying \
             close attention to the user's explicit requests",
        ]);
        assert!(asks_for_summary(&[
            user(&["make it blue"]),
            request.clone()
        ]));
        assert!(!asks_for_summary(&[request, user(&["make it blue"])]));
        assert!(!asks_for_summary(&[]));
    }

    #[test]
    fn claude_codes_summary_after_its_reminders_is_a_continuation() {
        let first = user(&[
            "<system-reminder>\n# claudeMd\nUse egrep.\n</system-reminder>",
            "This session is being continued from a previous conversation that ran out of \
             context. The conversation is summarized below:\nAnalysis: …",
            "alright, please delete the weather folder",
        ]);
        assert!(continues_compacted(&[first]));
    }

    #[test]
    fn codexs_summary_after_the_task_is_a_continuation() {
        let messages = [
            user(&["<environment_context>cwd: /repo</environment_context>"]),
            user(&["add a --json flag"]),
            user(&[
                "Another language model started to solve this problem and produced a summary \
                 of its thinking process. …",
            ]),
        ];
        assert!(continues_compacted(&messages));
    }

    #[test]
    fn pis_summary_is_a_continuation() {
        let messages = [
            user(&[
                "The conversation history before this point was compacted into the following \
                 summary: the tests pass.",
            ]),
            user(&["Run echo hi"]),
        ];
        assert!(continues_compacted(&messages));
    }

    #[test]
    fn opencodes_question_alone_is_a_continuation_and_inside_a_sentence_is_not() {
        assert!(continues_compacted(&[user(&["What did we do so far?"])]));
        assert!(!continues_compacted(&[user(&[
            "What did we do so far? Then add tests."
        ])]));
    }

    #[test]
    fn a_user_quoting_the_opening_later_or_mid_text_is_not() {
        let quoting = user(&[
            "Why does Claude say \"This session is being continued from a previous conversation\"?",
        ]);
        assert!(!continues_compacted(&[quoting]));
        let mut late = vec![user(&["one"]), user(&["two"]), user(&["three"])];
        late.push(user(&[
            "This session is being continued from a previous conversation",
        ]));
        assert!(!continues_compacted(&late));
        assert!(!continues_compacted(&[]));
    }
}
