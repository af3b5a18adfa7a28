//! Whether a strategy kept the user's own words: the report's `user_words_kept`.
//!
//! Cost alone rewards forgetting: a strategy that drops the history is cheap. What users of
//! host compaction miss first is what they themselves said (intent, corrections,
//! constraints), so the replay checks, per recording, which of the user's messages are still
//! there, verbatim, in the last request the strategy sent. A message's words are
//! [`mc_core::user_words`] (reminder blocks and tool results excluded), the same texts the
//! historian keeps, so the figure measures what the engine promises.

use std::collections::HashSet;
use std::sync::Arc;

use mc_core::{Message, Part, Role, user_words};
use mc_sim::strategy::PreparedCall;
use mc_sim::{Recording, RecordingFormat};

/// The distinct user messages of one recording, each as its list of texts, in the order
/// they first appear.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserMessages {
    /// Each message's ordinal in the history it was first read from, and its texts.
    messages: Vec<(u64, Vec<String>)>,
}

/// A user message a strategy's last request no longer held.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LostWords {
    /// Its ordinal in the recording's history.
    pub ordinal: u64,
    /// Its first [`LOST_PREVIEW_CHARS`] characters.
    pub text: String,
}

/// Characters of a lost message the report shows.
pub const LOST_PREVIEW_CHARS: usize = 80;

impl UserMessages {
    /// Every user message with words in `recording`'s conversation.
    ///
    /// The last step's history usually holds them all, but a client that compacts rewrites
    /// its own history, and the words it dropped were still said: so every step's history is
    /// read, each shared history once up to its longest request, and messages are
    /// deduplicated by their words. A call sent with a context of its own (the client's
    /// compaction call, whose last message is the summariser's instruction, not the user's)
    /// is left out, as it is for references.
    ///
    /// mini-swe-agent has no tool calls: its loop writes each command's output back as the
    /// next user message. In its trajectories only the first user message (the task) is the
    /// user's; the rest are tool output and are not counted.
    pub fn of(recording: &Recording) -> Self {
        let mut histories: Vec<(&Arc<Vec<Message>>, &[Message])> = Vec::new();
        for step in recording.steps.iter().filter(|step| step.context.is_none()) {
            let sent = step.request_messages();
            match histories
                .iter_mut()
                .find(|(history, _)| Arc::ptr_eq(history, &step.messages))
            {
                Some((_, longest)) if longest.len() < sent.len() => *longest = sent,
                Some(_) => {}
                None => histories.push((&step.messages, sent)),
            }
        }
        let observations_as_user = recording.format == RecordingFormat::SweTraj;
        Self::from_histories(histories.into_iter().map(|(_, sent)| {
            if observations_as_user {
                through_first_user(sent)
            } else {
                sent
            }
        }))
    }

    /// The distinct user messages of `histories`, read in order.
    pub fn from_histories<'m>(histories: impl IntoIterator<Item = &'m [Message]>) -> Self {
        let mut seen = HashSet::new();
        let messages = histories
            .into_iter()
            .flat_map(|history| {
                history
                    .iter()
                    .enumerate()
                    .map(|(ordinal, message)| (ordinal as u64, user_words(message)))
            })
            .filter(|(_, words)| !words.is_empty() && seen.insert(words.clone()))
            .collect();
        Self { messages }
    }

    /// How many there are.
    pub fn len(&self) -> u64 {
        self.messages.len() as u64
    }

    /// Whether the recording has no user words at all (its share is then undefined).
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// How many of these messages `request` still holds: every one of a message's texts must
    /// be a substring of some text of the request. No request (the strategy sent nothing)
    /// keeps nothing.
    pub fn kept_in(&self, request: Option<&PreparedCall<'_>>) -> u64 {
        self.len() - self.lost_in(request).len() as u64
    }

    /// The messages `request` no longer holds (all of them when there is no request), each
    /// by its ordinal and the start of its words.
    pub fn lost_in(&self, request: Option<&PreparedCall<'_>>) -> Vec<LostWords> {
        let texts = request.map(request_texts).unwrap_or_default();
        self.messages
            .iter()
            .filter(|(_, words)| {
                !words
                    .iter()
                    .all(|word| texts.iter().any(|text| text.contains(word.as_str())))
            })
            .map(|(ordinal, words)| LostWords {
                ordinal: *ordinal,
                text: words.join(" ").chars().take(LOST_PREVIEW_CHARS).collect(),
            })
            .collect()
    }
}

/// `history` up to and including its first user message (all of it when it has none).
fn through_first_user(history: &[Message]) -> &[Message] {
    history
        .iter()
        .position(|message| message.role == Role::User)
        .map_or(history, |first| &history[..=first])
}

/// Every text a request carries: the system prompt, text parts of any role, and the text of
/// tool results (the engine may quote the user there). Tool-call inputs and reasoning are
/// the model's, never where the user's words are kept.
fn request_texts<'c>(request: &'c PreparedCall<'_>) -> Vec<&'c str> {
    let mut texts: Vec<&str> = request.system.iter().map(String::as_str).collect();
    for message in request.messages.iter() {
        push_texts(&message.parts, &mut texts);
    }
    texts
}

fn push_texts<'c>(parts: &'c [Part], texts: &mut Vec<&'c str>) {
    for part in parts {
        match part {
            Part::Text { text, .. } => texts.push(text),
            Part::ToolResult { content, .. } => push_texts(content, texts),
            Part::ToolCall { .. }
            | Part::Thinking { .. }
            | Part::RedactedThinking { .. }
            | Part::Media { .. }
            | Part::Unknown { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use mc_sim::Step;
    use mc_sim::strategy::{Prepared, StepView};

    use super::*;

    fn user(text: &str) -> Message {
        Message::new(Role::User, vec![Part::text(text)])
    }

    fn assistant(text: &str) -> Message {
        Message::new(Role::Assistant, vec![Part::text(text)])
    }

    fn conversation() -> Vec<Message> {
        vec![
            user("<system-reminder>CLAUDE.md</system-reminder>make the parser strict"),
            assistant("Reading the parser."),
            Message::new(
                Role::User,
                vec![Part::ToolResult {
                    call_id: "c1".into(),
                    content: vec![Part::text("fn parse() {}")],
                    is_error: false,
                }],
            ),
            user("do not touch the lexer"),
            assistant("Understood."),
            user("and keep the error messages"),
        ]
    }

    fn step(messages: &[Message]) -> StepView<'_> {
        StepView {
            at_ms: 0,
            system: &[],
            tools: &[],
            messages,
            last_prompt_tokens: None,
        }
    }

    /// The share of `history`'s user messages that `request` keeps.
    fn share(history: &[Message], request: &Prepared<'_>) -> f64 {
        let users = UserMessages::from_histories([history]);
        users.kept_in(request.main()) as f64 / users.len() as f64
    }

    #[test]
    fn a_strategy_that_keeps_everything_scores_one() {
        let history = conversation();
        let sent = Prepared::single(PreparedCall::client(
            &step(&history),
            Cow::Borrowed(&history),
        ));
        assert_eq!(share(&history, &sent), 1.0);
    }

    #[test]
    fn a_summary_in_place_of_the_history_scores_low() {
        let history = conversation();
        let managed = vec![
            user("This session continues an earlier one. The user wants a stricter parser."),
            history[5].clone(),
        ];
        let sent = Prepared::single(PreparedCall::client(&step(&history), Cow::Owned(managed)));
        assert_eq!(share(&history, &sent), 1.0 / 3.0);
    }

    #[test]
    fn words_quoted_anywhere_in_the_request_count() {
        let history = conversation();
        let quoted = format!("Earlier the user said: {}.", "do not touch the lexer");
        let system = [format!("Notes\nmake the parser strict\n{quoted}")];
        let mut call = PreparedCall::client(&step(&history), Cow::Owned(vec![history[5].clone()]));
        call.system = &system;
        let users = UserMessages::from_histories([history.as_slice()]);
        assert_eq!(users.kept_in(Some(&call)), 3);
        assert_eq!(users.kept_in(None), 0);
    }

    #[test]
    fn a_message_counts_only_when_all_its_texts_are_kept() {
        let two_parts = Message::new(
            Role::User,
            vec![
                Part::text("rename the crate"),
                Part::text("and bump the version"),
            ],
        );
        let history = [two_parts];
        let users = UserMessages::from_histories([history.as_slice()]);
        let partial = [user("rename the crate")];
        let call = PreparedCall::client(&step(&partial), Cow::Borrowed(&partial));
        assert_eq!(users.kept_in(Some(&call)), 0);
    }

    #[test]
    fn rewritten_histories_add_their_messages_once() {
        let before = conversation();
        let after = vec![
            user("summary of the earlier work"),
            user("do not touch the lexer"),
        ];
        let users = UserMessages::from_histories([before.as_slice(), after.as_slice()]);
        let words: Vec<&[String]> = users
            .messages
            .iter()
            .map(|(_, words)| words.as_slice())
            .collect();
        assert_eq!(
            words,
            [
                ["make the parser strict".to_owned()],
                ["do not touch the lexer".to_owned()],
                ["and keep the error messages".to_owned()],
                ["summary of the earlier work".to_owned()],
            ]
        );
        assert!(UserMessages::from_histories([&after[..0]]).is_empty());
    }

    #[test]
    fn a_recording_reads_each_history_to_its_longest_request() {
        let first = Arc::new(conversation());
        let second = Arc::new(vec![user("summary so far"), user("ship it")]);
        let step = |messages: &Arc<Vec<Message>>, len: usize| Step {
            at_ms: 0,
            messages: Arc::clone(messages),
            len,
            response: assistant("ok"),
            output_tokens: None,
            recorded: None,
            context: None,
        };
        let recording = Recording {
            name: "rewritten".into(),
            format: RecordingFormat::ClaudeCode,
            model: "claude-sonnet-4-5".into(),
            system: Vec::new(),
            tools: Vec::new(),
            stand_ins: Vec::new(),
            steps: vec![
                step(&first, 1),
                step(&first, 4),
                step(&second, 2),
                step(&first, 2),
            ],
        };
        let users = UserMessages::of(&recording);
        let firsts: Vec<&str> = users
            .messages
            .iter()
            .map(|(_, words)| words[0].as_str())
            .collect();
        assert_eq!(
            firsts,
            [
                "make the parser strict",
                "do not touch the lexer",
                "summary so far",
                "ship it"
            ]
        );
    }

    #[test]
    fn in_a_swe_trajectory_only_the_task_is_the_users() {
        let history = Arc::new(vec![
            user("<pr_description>make the parser strict</pr_description>"),
            assistant("THOUGHT: look first\n```bash\nls\n```"),
            user("<returncode>0</returncode>\n<output>src tests</output>"),
            assistant("THOUGHT: done"),
        ]);
        let recording = Recording {
            name: "swe".into(),
            format: RecordingFormat::SweTraj,
            model: "claude-sonnet-4-5".into(),
            system: Vec::new(),
            tools: Vec::new(),
            stand_ins: Vec::new(),
            steps: vec![Step {
                at_ms: 0,
                messages: Arc::clone(&history),
                len: 3,
                response: assistant("THOUGHT: done"),
                output_tokens: None,
                recorded: None,
                context: None,
            }],
        };
        let users = UserMessages::of(&recording);
        assert_eq!(
            users.messages,
            [(
                0,
                vec!["<pr_description>make the parser strict</pr_description>".to_owned()]
            )]
        );
        let other = Recording {
            format: RecordingFormat::AnthropicCapture,
            ..recording
        };
        assert_eq!(UserMessages::of(&other).len(), 2);
    }

    #[test]
    fn lost_messages_are_named_by_ordinal_and_their_start() {
        let history = conversation();
        let users = UserMessages::from_histories([history.as_slice()]);
        let lost = users.lost_in(None);
        assert_eq!(lost.len() as u64, users.len());
        assert_eq!(lost[0].ordinal, 0);
        assert_eq!(lost[0].text, "make the parser strict");
        let long = UserMessages::from_histories([[user(&"x".repeat(200))].as_slice()]);
        assert_eq!(
            long.lost_in(None)[0].text.chars().count(),
            LOST_PREVIEW_CHARS
        );
    }

    /// The client's compaction call ends in the summariser's instruction: not the user's words.
    #[test]
    fn the_clients_compaction_instruction_is_not_counted() {
        let mut messages = conversation();
        messages.push(user(
            "Your task is to create a detailed summary of the conversation",
        ));
        let history = Arc::new(messages);
        let step = |len: usize, context: Option<Arc<mc_sim::StepContext>>| Step {
            at_ms: 0,
            messages: Arc::clone(&history),
            len,
            response: assistant("ok"),
            output_tokens: None,
            recorded: None,
            context,
        };
        let summariser = Arc::new(mc_sim::StepContext {
            system: vec!["Summarise.".into()],
            tools: Vec::new(),
        });
        let recording = Recording {
            name: "compacting".into(),
            format: RecordingFormat::ClaudeCode,
            model: "claude-sonnet-4-5".into(),
            system: Vec::new(),
            tools: Vec::new(),
            stand_ins: Vec::new(),
            steps: vec![step(6, None), step(7, Some(summariser))],
        };
        let counted = UserMessages::of(&recording);
        assert_eq!(counted.len(), 3, "{counted:?}");
        assert!(
            counted
                .messages
                .iter()
                .all(|(_, words)| !words[0].starts_with("Your task"))
        );
    }
}
