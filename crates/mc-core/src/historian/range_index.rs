//! A compartment's index: the files, commands and names its range used, taken from the raw
//! messages, not from the model's summary.
//!
//! A summary keeps the story and loses the names: measured on recorded sessions, most of
//! what a model went on to use after its history was summarised were identifiers the range
//! had shown (often ones the model itself had written). So every compartment carries the
//! names of its range, chosen deterministically when it is published and stored with it, and
//! rendered as one line under its heading ([`crate::head`]): the model keeps the names
//! while the prose decays, and can `ctx_expand` the range when it needs more.
//!
//! What is chosen: the files tool calls read or wrote (the last two components of their
//! path), the shell commands they ran (first line, shortened), and the other identifiers
//! ([`crate::identifiers`]) by how much the range leans on them: written by the model (its
//! text and its calls' inputs) counts most, then the user's words, then tool output, which
//! is often long lists of names nobody used. Each list is bounded, so an index costs at most
//! a line or two of tokens whatever the range.

use std::collections::HashMap;

use crate::head::RangeIndex;
use crate::identifiers::{identifiers, parts_identifiers, value_identifiers};
use crate::{Message, Part, Role};

/// Files listed at most.
pub const MAX_FILES: usize = 8;
/// Commands listed at most (the last ones run).
pub const MAX_COMMANDS: usize = 4;
/// Other names listed at most. Chosen by replay on the frontier of cost against the
/// references kept (`replay --strategy magic,autocompact`, controlled cost ratio / share of
/// the identifiers each answer used that its request still held, on the shared swe
/// trajectories at 200K and at 64K): 16 names 0.901 / 0.970 and 1.129 / 0.959; 24 names
/// 0.907 / 0.980 and 1.138 / 0.972; 40 names 0.912 / 0.990 and 1.146 / 0.986; 64 names
/// 0.923 / 0.995 and 1.153 / 0.994. Past 40 each name kept costs about twice as much. On
/// the long generated sessions (seeds 1, 2, 3, 7 at 200K), whose references 16 names already
/// kept (0.993-0.996), 40 costs 0.795 of autocompact where 16 cost 0.771.
pub const MAX_NAMES: usize = 40;
/// Characters a listed command keeps.
pub const COMMAND_CHARS: usize = 60;
/// Characters a listed name or file keeps at most; longer ones are left out (data, not
/// names).
pub const NAME_CHARS: usize = 60;

/// Input keys that name a file a tool reads or writes (Claude Code, Codex, OpenCode, Pi).
const PATH_KEYS: [&str; 5] = ["file_path", "path", "notebook_path", "filePath", "filename"];
/// Input keys that hold a shell command.
const COMMAND_KEYS: [&str; 2] = ["command", "cmd"];

/// How much one occurrence weighs, by who wrote it.
const WRITTEN_BY_MODEL: u32 = 3;
const WRITTEN_BY_USER: u32 = 2;
const SHOWN_BY_TOOL: u32 = 1;

/// The index of a range of messages (in order).
pub fn range_index(messages: &[(u64, &Message)]) -> RangeIndex {
    let mut files = Ranked::default();
    let mut commands: Vec<String> = Vec::new();
    let mut names = Ranked::default();
    for (_, message) in messages {
        for part in &message.parts {
            match part {
                Part::ToolCall { input, .. } => {
                    for (key, value) in input.as_object().into_iter().flatten() {
                        // A path or a command is listed as such; the names inside it count
                        // as little as tool output, the rest of the input (code written, a
                        // pattern searched) as the model's own words.
                        let weight = match value.as_str() {
                            Some(path) if PATH_KEYS.contains(&key.as_str()) => {
                                if let Some(file) = short_path(path) {
                                    files.add(&file, WRITTEN_BY_MODEL);
                                }
                                SHOWN_BY_TOOL
                            }
                            Some(command) if COMMAND_KEYS.contains(&key.as_str()) => {
                                if let Some(command) = short_command(command) {
                                    commands.retain(|known| *known != command);
                                    commands.push(command);
                                }
                                SHOWN_BY_TOOL
                            }
                            _ => WRITTEN_BY_MODEL,
                        };
                        value_identifiers(value, &mut |id| names.add(id, weight));
                    }
                    if !input.is_object() {
                        value_identifiers(input, &mut |id| names.add(id, WRITTEN_BY_MODEL));
                    }
                }
                Part::Text { text, .. } => {
                    let weight = match message.role {
                        Role::Assistant => WRITTEN_BY_MODEL,
                        Role::User | Role::System => WRITTEN_BY_USER,
                        Role::Tool => SHOWN_BY_TOOL,
                    };
                    identifiers(text, &mut |id| names.add(id, weight));
                }
                Part::ToolResult { content, .. } => {
                    parts_identifiers(content, &mut |id| names.add(id, SHOWN_BY_TOOL));
                }
                Part::Thinking { .. }
                | Part::RedactedThinking { .. }
                | Part::Media { .. }
                | Part::Unknown { .. } => {}
            }
        }
    }
    let files = files.best(MAX_FILES);
    // A file's own name is already in the file list.
    names.forget(|name| files.iter().any(|file| file_name(file) == name));
    let start = commands.len().saturating_sub(MAX_COMMANDS);
    RangeIndex {
        files,
        ran: commands.split_off(start),
        names: names.best(MAX_NAMES),
    }
}

/// Candidates with their weight, and when each was first and last seen.
#[derive(Default)]
struct Ranked {
    seen: usize,
    entries: HashMap<String, Seen>,
}

struct Seen {
    weight: u32,
    first: usize,
    last: usize,
}

impl Ranked {
    fn add(&mut self, name: &str, weight: u32) {
        if name.chars().count() > NAME_CHARS {
            return;
        }
        self.seen += 1;
        let at = self.seen;
        let entry = self.entries.entry(name.to_owned()).or_insert(Seen {
            weight: 0,
            first: at,
            last: at,
        });
        entry.weight = entry.weight.saturating_add(weight);
        entry.last = at;
    }

    fn forget(&mut self, unwanted: impl Fn(&str) -> bool) {
        self.entries.retain(|name, _| !unwanted(name));
    }

    /// The `limit` weightiest (ties: the one seen last, as the range ended with it), in the
    /// order they first appeared.
    fn best(self, limit: usize) -> Vec<String> {
        let mut entries: Vec<(String, Seen)> = self.entries.into_iter().collect();
        entries.sort_by(|a, b| b.1.weight.cmp(&a.1.weight).then(b.1.last.cmp(&a.1.last)));
        entries.truncate(limit);
        entries.sort_by_key(|(_, seen)| seen.first);
        entries.into_iter().map(|(name, _)| name).collect()
    }
}

/// The last two components of a path (`src/card_parser.py`), or `None` for an empty one.
fn short_path(path: &str) -> Option<String> {
    let components: Vec<&str> = path
        .split(['/', '\\'])
        .filter(|component| !component.is_empty() && *component != ".")
        .collect();
    let start = components.len().saturating_sub(2);
    let short = components[start..].join("/");
    (!short.is_empty() && !short.contains(char::is_control)).then_some(short)
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// A command's first line, whitespace collapsed, cut to [`COMMAND_CHARS`] (with `…`).
fn short_command(command: &str) -> Option<String> {
    let line = command.lines().find(|line| !line.trim().is_empty())?;
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= COMMAND_CHARS {
        return Some(line);
    }
    let cut: String = line.chars().take(COMMAND_CHARS - 1).collect();
    Some(format!("{}…", cut.trim_end()))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn call(name: &str, input: Value) -> Message {
        Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: "c".into(),
                name: name.into(),
                input,
            }],
        )
    }

    fn result(text: &str) -> Message {
        Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: "c".into(),
                content: vec![Part::text(text)],
                is_error: false,
            }],
        )
    }

    fn index(messages: &[Message]) -> RangeIndex {
        let indexed: Vec<(u64, &Message)> = messages
            .iter()
            .enumerate()
            .map(|(ordinal, message)| (ordinal as u64, message))
            .collect();
        range_index(&indexed)
    }

    #[test]
    fn files_commands_and_names_of_a_range() {
        let messages = [
            Message::new(
                Role::User,
                vec![Part::text(
                    "Rounding is wrong in card_parser; keep MAX_RETRIES at 3.",
                )],
            ),
            call(
                "Read",
                json!({"file_path": "/home/u/proj/src/card_parser.py"}),
            ),
            result("def parse_card(raw):\n    return round_half(raw.value_cents)"),
            call(
                "Bash",
                json!({"command": "cd /home/u/proj && pytest -k rounding tests/test_cards.py\necho done"}),
            ),
            result("FAILED tests/test_cards.py::test_round_half_even - AssertionError"),
            Message::new(
                Role::Assistant,
                vec![Part::text(
                    "round_half drops the half cent; fixing parse_card.",
                )],
            ),
            call(
                "Edit",
                json!({"file_path": "src/card_parser.py", "old_string": "round_half(", "new_string": "round_half_even("}),
            ),
        ];
        let index = index(&messages);
        assert_eq!(index.files, ["src/card_parser.py"]);
        assert_eq!(
            index.ran,
            ["cd /home/u/proj && pytest -k rounding tests/test_cards.py"]
        );
        assert!(index.names.contains(&"round_half".to_owned()), "{index:?}");
        assert!(index.names.contains(&"parse_card".to_owned()), "{index:?}");
        assert!(index.names.contains(&"MAX_RETRIES".to_owned()), "{index:?}");
        assert!(
            index.names.contains(&"round_half_even".to_owned()),
            "{index:?}"
        );
        assert!(
            !index.names.contains(&"card_parser.py".to_owned()),
            "a listed file is not listed again as a name: {index:?}"
        );
    }

    #[test]
    fn lists_are_bounded_and_prefer_what_the_model_wrote() {
        let listing: String = (0..200).map(|n| format!("generated_name_{n}\n")).collect();
        let mut messages = vec![result(&listing)];
        for n in 0..30 {
            messages.push(call("Bash", json!({"command": format!("make target_{n}")})));
            messages.push(call("Read", json!({"path": format!("src/module_{n}.rs")})));
        }
        messages.push(Message::new(
            Role::Assistant,
            vec![Part::text("The culprit is chosen_helper_fn.")],
        ));
        let index = index(&messages);
        assert_eq!(
            index.files.first().map(String::as_str),
            Some("src/module_22.rs")
        );
        assert_eq!(index.files.len(), MAX_FILES);
        assert_eq!(
            index.ran,
            [
                "make target_26",
                "make target_27",
                "make target_28",
                "make target_29"
            ]
        );
        assert_eq!(index.names.len(), MAX_NAMES);
        assert!(
            index.names.contains(&"chosen_helper_fn".to_owned()),
            "{index:?}"
        );
        assert!(
            index
                .names
                .iter()
                .all(|name| !name.starts_with("generated_name_")),
            "tool output alone loses to what the model wrote: {index:?}"
        );
    }

    #[test]
    fn long_commands_are_cut_and_the_index_is_stable() {
        let long = format!("python -c '{}'", "x".repeat(200));
        let messages = [call("Bash", json!({"cmd": long}))];
        let index = index(&messages);
        assert_eq!(index.ran[0].chars().count(), COMMAND_CHARS);
        assert!(index.ran[0].ends_with('…'));
        assert_eq!(index, super::range_index(&[(0, &messages[0])]));
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn arb_message() -> impl Strategy<Value = Message> {
        let text = "[ -~\n]{0,80}";
        prop_oneof![
            text.prop_map(|t| Message::new(Role::User, vec![Part::text(t)])),
            text.prop_map(|t| Message::new(Role::Assistant, vec![Part::text(t)])),
            (text, text).prop_map(|(path, command)| Message::new(
                Role::Assistant,
                vec![Part::ToolCall {
                    id: "c".into(),
                    name: "Tool".into(),
                    input: json!({"file_path": path, "command": command, "new_string": path}),
                }],
            )),
            text.prop_map(|t| Message::new(
                Role::User,
                vec![Part::ToolResult {
                    call_id: "c".into(),
                    content: vec![Part::text(t)],
                    is_error: false,
                }],
            )),
        ]
    }

    proptest! {
        /// Any range gives a bounded index, the same every time it is computed.
        #[test]
        fn an_index_is_bounded_and_a_pure_function_of_its_range(
            messages in prop::collection::vec(arb_message(), 0..40),
        ) {
            let indexed: Vec<(u64, &Message)> =
                messages.iter().enumerate().map(|(n, m)| (n as u64, m)).collect();
            let index = range_index(&indexed);
            prop_assert!(index.files.len() <= MAX_FILES);
            prop_assert!(index.ran.len() <= MAX_COMMANDS);
            prop_assert!(index.names.len() <= MAX_NAMES);
            prop_assert!(index.ran.iter().all(|c| c.chars().count() <= COMMAND_CHARS));
            prop_assert!(index.names.iter().all(|n| n.chars().count() <= NAME_CHARS));
            prop_assert!(index.ran.iter().chain(&index.files).all(|t| !t.contains('\n')));
            prop_assert_eq!(&index, &range_index(&indexed));
        }
    }
}
