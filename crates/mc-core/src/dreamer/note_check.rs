//! Smart notes whose condition is written in plain words, as the judging model reads them,
//! the tool it answers with, and the strict reading of that answer.
//!
//! A condition a rule can check (a date, a file, a commit message) never comes here; one
//! like "when the CI config changes" does, with what happened in the project since the note
//! was written: the commits, each with its subject and the files it touched. The model says
//! whether the condition now holds; a note it says nothing about, or says does not hold,
//! stays pending. The format is line-based and read back by [`read_notes_message`], which
//! is how the simulator plays the model.

use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::{Value, json};

/// The judging model's instructions.
pub const NOTES_SYSTEM: &str = "\
You decide when a coding agent's reminders are due. Each note below was left with a \
condition in plain words (\"when the CI config changes\") and comes with what happened in \
the project since it was written: today's date and the commits made since, each with its \
subject and the files it touched. For each note, say whether its condition holds now, \
judging only from what is shown, with a short reason naming the commit, file or date that \
makes it true. When nothing shown makes it true, it does not hold yet. Answer only with a \
call to the judging tool.";

/// The tool the judging model must call.
pub const NOTES_TOOL: &str = "judge_notes";

/// Most commits shown per note, newest first: enough to see the recent work.
pub const COMMITS_SHOWN: usize = 20;

/// Most files shown per commit.
pub const FILES_SHOWN: usize = 10;

/// A commit made since a note was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitSeen {
    /// The first line of its message.
    pub subject: String,
    /// The files it touched, relative to the project root.
    pub files: Vec<String>,
}

/// A smart note to judge, with what happened since it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteCheck {
    /// The note.
    pub note_id: u64,
    /// Its condition, as the agent wrote it.
    pub condition: String,
    /// The day it was written (`YYYY-MM-DD`, UTC).
    pub written: String,
    /// The commits since, newest first.
    pub commits: Vec<CommitSeen>,
}

/// The model's decision about one note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteVerdict {
    /// The note.
    pub note_id: u64,
    /// Whether its condition holds now.
    pub holds: bool,
    /// Why, for the run's record.
    pub reason: String,
}

const OPENING: &str = "Smart notes whose condition is written in plain words:";

/// One line of text: whitespace collapsed, so a message reads back line by line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The user message of a judging call on `today` (`YYYY-MM-DD`).
pub fn notes_user_message(today: &str, notes: &[NoteCheck]) -> String {
    let mut out = format!("{OPENING}\nToday: {today}\n");
    for note in notes {
        let _ = write!(
            out,
            "\nNote {} (written {}): {}\n",
            note.note_id,
            note.written,
            one_line(&note.condition)
        );
        if note.commits.is_empty() {
            out.push_str("- no commits since\n");
        }
        for commit in note.commits.iter().take(COMMITS_SHOWN) {
            let files: Vec<String> = commit
                .files
                .iter()
                .take(FILES_SHOWN)
                .map(|file| one_line(file))
                .collect();
            let _ = writeln!(
                out,
                "- commit: {} | files: {}",
                one_line(&commit.subject).replace(" | ", " / "),
                files.join(", ")
            );
        }
    }
    out
}

/// Reads back today and the notes of a message [`notes_user_message`] wrote, or `None` when
/// `message` is not one.
pub fn read_notes_message(message: &str) -> Option<(String, Vec<NoteCheck>)> {
    let mut lines = message.lines();
    if lines.next()? != OPENING {
        return None;
    }
    let today = lines.next()?.strip_prefix("Today: ")?.to_owned();
    let mut notes: Vec<NoteCheck> = Vec::new();
    for line in lines.filter(|line| !line.is_empty()) {
        if let Some(rest) = line.strip_prefix("Note ") {
            let (id, rest) = rest.split_once(" (written ")?;
            let (written, condition) = rest.split_once("): ")?;
            notes.push(NoteCheck {
                note_id: id.parse().ok()?,
                condition: condition.to_owned(),
                written: written.to_owned(),
                commits: Vec::new(),
            });
        } else if line == "- no commits since" {
            notes.last()?;
        } else {
            let (subject, files) = line.strip_prefix("- commit: ")?.split_once(" | files: ")?;
            let files = files
                .split(", ")
                .filter(|file| !file.is_empty())
                .map(str::to_owned)
                .collect();
            notes.last_mut()?.commits.push(CommitSeen {
                subject: subject.to_owned(),
                files,
            });
        }
    }
    Some((today, notes))
}

/// The judging tool: name, description and input schema.
pub fn notes_tool() -> Value {
    json!({
        "name": NOTES_TOOL,
        "description": "Record for each note whether its condition holds now, with a short reason.",
        "input_schema": {
            "type": "object",
            "required": ["notes"],
            "properties": {
                "notes": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["note_id", "holds", "reason"],
                        "properties": {
                            "note_id": {"type": "integer", "minimum": 0},
                            "holds": {"type": "boolean"},
                            "reason": {"type": "string"}
                        }
                    }
                }
            }
        }
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAnswer {
    notes: Vec<RawVerdict>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVerdict {
    note_id: u64,
    holds: bool,
    #[serde(default)]
    reason: Option<String>,
}

/// Reads the judging tool's input for the notes `asked` about. Every verdict must name one
/// of them, once; one that holds needs its reason. Any problem rejects the answer whole, so
/// a confused model surfaces no note at all.
pub fn parse_note_verdicts(input: &Value, asked: &[u64]) -> Result<Vec<NoteVerdict>, String> {
    let raw: RawAnswer = serde_json::from_value(input.clone())
        .map_err(|error| format!("the `{NOTES_TOOL}` input does not match its schema: {error}"))?;
    let mut verdicts: Vec<NoteVerdict> = Vec::with_capacity(raw.notes.len());
    for verdict in raw.notes {
        let id = verdict.note_id;
        if !asked.contains(&id) {
            return Err(format!("note {id} was not asked about"));
        }
        if verdicts.iter().any(|earlier| earlier.note_id == id) {
            return Err(format!("note {id} has two verdicts"));
        }
        let reason = verdict
            .reason
            .map(|reason| one_line(&reason))
            .unwrap_or_default();
        if verdict.holds && reason.is_empty() {
            return Err(format!("the verdict that note {id} holds needs a reason"));
        }
        verdicts.push(NoteVerdict {
            note_id: id,
            holds: verdict.holds,
            reason,
        });
    }
    Ok(verdicts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notes() -> Vec<NoteCheck> {
        vec![
            NoteCheck {
                note_id: 4,
                condition: "when the CI\nconfig changes".into(),
                written: "2026-11-02".into(),
                commits: vec![CommitSeen {
                    subject: "Move CI | config to Actions".into(),
                    files: vec![".github/workflows/ci.yml".into(), "Makefile".into()],
                }],
            },
            NoteCheck {
                note_id: 9,
                condition: "once the tests slow down".into(),
                written: "2026-11-30".into(),
                commits: Vec::new(),
            },
        ]
    }

    #[test]
    fn the_message_reads_back_as_written() {
        let message = notes_user_message("2026-12-05", &notes());
        insta::assert_snapshot!(message, @r"
        Smart notes whose condition is written in plain words:
        Today: 2026-12-05

        Note 4 (written 2026-11-02): when the CI config changes
        - commit: Move CI / config to Actions | files: .github/workflows/ci.yml, Makefile

        Note 9 (written 2026-11-30): once the tests slow down
        - no commits since
        ");
        let mut expected = notes();
        expected[0].condition = "when the CI config changes".into();
        expected[0].commits[0].subject = "Move CI / config to Actions".into();
        assert_eq!(
            read_notes_message(&message),
            Some(("2026-12-05".to_owned(), expected))
        );
        assert_eq!(read_notes_message("Memories to check"), None);
    }

    #[test]
    fn verdicts_are_read_strictly() {
        let good = json!({"notes": [
            {"note_id": 4, "holds": true, "reason": " ci.yml moved "},
            {"note_id": 9, "holds": false, "reason": ""}
        ]});
        assert_eq!(
            parse_note_verdicts(&good, &[4, 9]),
            Ok(vec![
                NoteVerdict {
                    note_id: 4,
                    holds: true,
                    reason: "ci.yml moved".into()
                },
                NoteVerdict {
                    note_id: 9,
                    holds: false,
                    reason: String::new()
                },
            ])
        );
        for (bad, expected) in [
            (json!({"due": [4]}), "does not match its schema"),
            (
                json!({"notes": [{"note_id": 5, "holds": true, "reason": "x"}]}),
                "note 5 was not asked",
            ),
            (
                json!({"notes": [{"note_id": 4, "holds": false}, {"note_id": 4, "holds": true, "reason": "x"}]}),
                "note 4 has two verdicts",
            ),
            (
                json!({"notes": [{"note_id": 4, "holds": true}]}),
                "needs a reason",
            ),
            (
                json!({"notes": [{"note_id": 4, "holds": "yes", "reason": "x"}]}),
                "does not match",
            ),
        ] {
            let error = parse_note_verdicts(&bad, &[4, 9]).unwrap_err();
            assert!(error.contains(expected), "{error} lacks {expected}");
        }
        assert_eq!(notes_tool()["name"], NOTES_TOOL);
    }
}
