//! The simulated dreamer judging smart notes: from a judging call's notes, the
//! `judge_notes` input a careful model would write.
//!
//! A condition holds when one commit shown since the note was written carries every
//! significant word of it (in its subject or the paths it touched): "when the CI config
//! changes" holds for a commit touching `.github/workflows/ci-config.yml`, not for one that
//! only says "Speed up CI". Words that say when rather than what ("when", "changes", "the")
//! do not count, and a condition with nothing left never holds: keeping a note pending is the
//! safe side.

use mc_core::dreamer::{CommitSeen, NoteCheck, read_notes_message};
use serde_json::{Value, json};

/// Words that carry no subject of their own.
const FILLER: &[&str] = &[
    "a",
    "an",
    "and",
    "are",
    "as",
    "be",
    "been",
    "becomes",
    "change",
    "changed",
    "changes",
    "for",
    "get",
    "gets",
    "has",
    "have",
    "if",
    "in",
    "is",
    "it",
    "of",
    "on",
    "once",
    "or",
    "someone",
    "something",
    "soon",
    "the",
    "to",
    "touches",
    "touched",
    "updated",
    "we",
    "when",
];

/// The `judge_notes` input for the judging user message `user_message`, or `None` when the
/// message is not one.
pub fn notes_answer(user_message: &str) -> Option<Value> {
    let (_, notes) = read_notes_message(user_message)?;
    let verdicts: Vec<Value> = notes.iter().map(judge).collect();
    Some(json!({ "notes": verdicts }))
}

fn judge(note: &NoteCheck) -> Value {
    let words: Vec<String> = note
        .condition
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|word| word.len() > 1 && !FILLER.contains(&word.as_str()))
        .collect();
    let carrying = (!words.is_empty())
        .then(|| note.commits.iter().find(|commit| carries(commit, &words)))
        .flatten();
    match carrying {
        Some(commit) => json!({
            "note_id": note.note_id,
            "holds": true,
            "reason": format!("commit \"{}\" answers it", commit.subject),
        }),
        None => json!({
            "note_id": note.note_id,
            "holds": false,
            "reason": "nothing since it was written answers it",
        }),
    }
}

fn carries(commit: &CommitSeen, words: &[String]) -> bool {
    let text = format!("{} {}", commit.subject, commit.files.join(" ")).to_lowercase();
    words.iter().all(|word| text.contains(word.as_str()))
}

#[cfg(test)]
mod tests {
    use mc_core::dreamer::{NoteVerdict, notes_user_message, parse_note_verdicts};

    use super::*;

    fn note(id: u64, condition: &str, commits: Vec<CommitSeen>) -> NoteCheck {
        NoteCheck {
            note_id: id,
            condition: condition.into(),
            written: "2026-11-02".into(),
            commits,
        }
    }

    fn commit(subject: &str, files: &[&str]) -> CommitSeen {
        CommitSeen {
            subject: subject.into(),
            files: files.iter().map(|file| (*file).to_owned()).collect(),
        }
    }

    #[test]
    fn a_condition_holds_when_one_commit_carries_all_its_words() {
        let notes = vec![
            note(
                1,
                "when the CI config changes",
                vec![
                    commit("Speed up CI", &["Makefile"]),
                    commit("Tidy", &[".github/workflows/ci-config.yml"]),
                ],
            ),
            note(
                2,
                "when the tests slow down",
                vec![commit("Speed up CI", &[])],
            ),
            note(3, "when it changes", vec![commit("Anything", &["it.rs"])]),
        ];
        let answer = notes_answer(&notes_user_message("2026-12-05", &notes)).unwrap();
        let verdicts = parse_note_verdicts(&answer, &[1, 2, 3]).unwrap();
        let holds: Vec<(u64, bool)> = verdicts
            .iter()
            .map(|NoteVerdict { note_id, holds, .. }| (*note_id, *holds))
            .collect();
        assert_eq!(holds, [(1, true), (2, false), (3, false)]);
        assert_eq!(verdicts[0].reason, "commit \"Tidy\" answers it");
        assert_eq!(notes_answer("Summarise this."), None);
    }
}
