//! Whether a strategy kept what the model went on to use: the report's `references_kept`.
//!
//! Cost alone rewards forgetting, and `user_words_kept` looks only at the user's messages.
//! Each step's recorded answer shows what the model used next: the files, symbols, commands
//! and values its text and tool calls name. An identifier there that the conversation had
//! already shown (before its newest message, and not in the system prompt or tools, which
//! every strategy sends) is earlier context the model drew on. When the strategy's request
//! for that step holds it nowhere (not raw, not in an excerpt, not in a summary), the model
//! would have had to find it again: re-read a file, re-run a command, or ask. The figure is
//! the share of such identifiers the requests still held, over every step.
//!
//! The answers are fixed by the recording, so the figure cannot say what a model would have
//! done instead; it says how often a strategy took away something the recorded model used.
//! Identifiers ([`mc_core::identifiers`]) are a conservative stand-in for "what was used":
//! plain words are left out (they match anywhere), so what is counted is mostly paths, names
//! and values.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use mc_core::Message;
use mc_core::identifiers::{identifiers, message_identifiers, value_identifiers};
use mc_sim::strategy::PreparedCall;
use mc_sim::{Recording, ToolSpec};

/// For each step of one recording, the identifiers its answer used that only earlier
/// context showed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepReferences {
    steps: Vec<Vec<String>>,
    /// Per step, per reference: the index in the history of the message that first showed it.
    first_shown: Vec<Vec<usize>>,
}

impl StepReferences {
    /// The references of every step of `recording`. Steps sent with a system prompt of their
    /// own (a client's compaction call) answer a summariser's question, not the agent's, and
    /// have none.
    pub fn of(recording: &Recording) -> Self {
        let shared = identifier_set(&recording.system, &recording.tools);
        let mut seen: HashMap<*const Vec<Message>, FirstSeen> = HashMap::new();
        let (steps, first_shown) = recording
            .steps
            .iter()
            .map(|step| {
                if step.context.is_some() {
                    return (Vec::new(), Vec::new());
                }
                let history = step.request_messages();
                let Some((newest, earlier)) = history.split_last() else {
                    return (Vec::new(), Vec::new());
                };
                let first_seen = seen.entry(Arc::as_ptr(&step.messages)).or_default();
                first_seen.read_through(&step.messages, history.len());
                let mut in_newest = HashSet::new();
                message_identifiers(newest, &mut |id| {
                    in_newest.insert(id.to_owned());
                });
                let mut used = Vec::new();
                let mut shown = Vec::new();
                message_identifiers(&step.response, &mut |id| {
                    let earlier_only = first_seen.is_before(id, earlier.len())
                        && !in_newest.contains(id)
                        && !shared.contains(id);
                    if earlier_only && !used.iter().any(|known| known == id) {
                        used.push(id.to_owned());
                        shown.push(first_seen.first.get(id).copied().unwrap_or_default());
                    }
                });
                (used, shown)
            })
            .unzip();
        Self { steps, first_shown }
    }

    /// Step `step`'s references `request` does not hold, each with the index in the history
    /// of the message that first showed it.
    pub fn missed_in(&self, step: usize, request: &PreparedCall<'_>) -> Vec<(&str, usize)> {
        let found = self.found_in(step, request);
        let wanted = self.steps.get(step).map_or(&[][..], Vec::as_slice);
        let shown = self.first_shown.get(step).map_or(&[][..], Vec::as_slice);
        wanted
            .iter()
            .zip(shown)
            .zip(found)
            .filter(|(_, found)| !found)
            .map(|((id, &shown), _)| (id.as_str(), shown))
            .collect()
    }

    /// How many of step `step`'s references `request` holds, and how many there are.
    pub fn kept_in(&self, step: usize, request: &PreparedCall<'_>) -> (u64, u64) {
        let found = self.found_in(step, request);
        let kept = found.iter().filter(|&&found| found).count();
        (kept as u64, found.len() as u64)
    }

    /// Per reference of step `step`, whether `request` holds it.
    fn found_in(&self, step: usize, request: &PreparedCall<'_>) -> Vec<bool> {
        let Some(wanted) = self.steps.get(step).filter(|wanted| !wanted.is_empty()) else {
            return Vec::new();
        };
        let mut found = vec![false; wanted.len()];
        let mut note = |id: &str| {
            if let Some(index) = wanted.iter().position(|want| want == id) {
                found[index] = true;
            }
        };
        for text in request.system {
            identifiers(text, &mut note);
        }
        for message in request.messages.iter() {
            message_identifiers(message, &mut note);
        }
        found
    }
}

/// Where each identifier of one shared history first appears, read incrementally: steps of a
/// recording share their history and each sends a longer prefix of it.
#[derive(Debug, Default)]
struct FirstSeen {
    read: usize,
    first: HashMap<String, usize>,
}

impl FirstSeen {
    fn read_through(&mut self, messages: &[Message], len: usize) {
        for (index, message) in messages.iter().enumerate().take(len).skip(self.read) {
            message_identifiers(message, &mut |id| {
                self.first.entry(id.to_owned()).or_insert(index);
            });
        }
        self.read = self.read.max(len);
    }

    /// Whether `id` appears in the first `len` messages.
    fn is_before(&self, id: &str, len: usize) -> bool {
        self.first.get(id).is_some_and(|&index| index < len)
    }
}

/// Every identifier of a system prompt and tool list.
fn identifier_set(system: &[String], tools: &[ToolSpec]) -> HashSet<String> {
    let mut set = HashSet::new();
    let mut add = |id: &str| {
        set.insert(id.to_owned());
    };
    for text in system {
        identifiers(text, &mut add);
    }
    for tool in tools {
        identifiers(&tool.name, &mut add);
        identifiers(&tool.description, &mut add);
        value_identifiers(&tool.input_schema, &mut add);
    }
    set
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use mc_core::{Part, Role};
    use mc_sim::strategy::StepView;
    use mc_sim::{RecordingFormat, Step};
    use serde_json::json;

    use super::*;

    fn user(text: &str) -> Message {
        Message::new(Role::User, vec![Part::text(text)])
    }

    fn read_call(path: &str) -> Message {
        Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: "c1".into(),
                name: "Read".into(),
                input: json!({ "file_path": path }),
            }],
        )
    }

    fn result(text: &str) -> Message {
        Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: "c1".into(),
                content: vec![Part::text(text)],
                is_error: false,
            }],
        )
    }

    fn edit(old: &str) -> Message {
        Message::new(
            Role::Assistant,
            vec![
                Part::Thinking {
                    text: "maybe hidden_thought_id".into(),
                    signature: None,
                },
                Part::ToolCall {
                    id: "c2".into(),
                    name: "Edit".into(),
                    input: json!({ "file_path": "src/card_parser.py", "old_string": old }),
                },
            ],
        )
    }

    fn recording(history: Vec<Message>, response: Message) -> Recording {
        let len = history.len();
        Recording {
            name: "edit".into(),
            format: RecordingFormat::ClaudeCode,
            model: "claude-sonnet-4-5".into(),
            system: vec!["Tools read files; see tool_schema.json".into()],
            tools: Vec::new(),
            stand_ins: Vec::new(),
            steps: vec![Step {
                at_ms: 0,
                messages: Arc::new(history),
                len,
                response,
                output_tokens: None,
                recorded: None,
                context: None,
            }],
        }
    }

    fn history() -> Vec<Message> {
        vec![
            user("Fix the rounding in src/card_parser.py"),
            read_call("src/card_parser.py"),
            result("def _format_value(value):\n    return str(round_half(value))"),
            user("Keep tool_schema.json as it is; the fix is in fresh_module.rs"),
        ]
    }

    #[test]
    fn a_step_uses_what_only_earlier_messages_showed() {
        let answer = edit("_format_value round_half unseen_name fresh_module.rs tool_schema.json");
        let references = StepReferences::of(&recording(history(), answer));
        // Not counted: a name nowhere before (`unseen_name`), one the newest message shows
        // (`fresh_module.rs`, every strategy sends it), one of the system prompt, reasoning.
        assert_eq!(
            references.steps,
            [["card_parser.py", "_format_value", "round_half"]]
        );
    }

    fn request<'a>(recording: &'a Recording, messages: Vec<Message>) -> PreparedCall<'a> {
        let step = &recording.steps[0];
        let view = StepView {
            at_ms: 0,
            system: &recording.system,
            tools: &recording.tools,
            messages: step.request_messages(),
            last_prompt_tokens: None,
        };
        PreparedCall::client(&view, Cow::Owned(messages))
    }

    #[test]
    fn a_request_keeps_a_reference_wherever_it_shows_it() {
        let recording = recording(history(), edit("_format_value round_half"));
        let references = StepReferences::of(&recording);
        let everything = request(&recording, history());
        assert_eq!(references.kept_in(0, &everything), (3, 3));
        let summarised = vec![
            user("Summary: the user wants rounding fixed in card_parser.py."),
            history()[3].clone(),
        ];
        let summarised = request(&recording, summarised);
        assert_eq!(references.kept_in(0, &summarised), (1, 3));
        // What went missing, with the message that first showed it: the tool result.
        assert_eq!(
            references.missed_in(0, &summarised),
            [("_format_value", 2), ("round_half", 2)]
        );
        assert_eq!(references.missed_in(0, &everything), []);
        assert_eq!(references.kept_in(1, &everything), (0, 0));
    }
}
