//! A smart note's condition, when a rule can check it: a day that comes, a file that appears,
//! goes or changes, a commit message that mentions something.
//!
//! Agents write conditions in plain words, so only a few exact shapes are read here ("after
//! 2026-12-10", "when `src/new.rs` exists", "when Cargo.lock changes", "when a commit
//! mentions the migration"); anything else is left to the model, which is shown the commits
//! since the note was written. A shape read wrongly would surface a note early or never, so
//! the shapes are strict: the whole condition must match one, or it is not a rule's to
//! decide.

use chrono::{DateTime, NaiveDate};

use crate::project_commits::ProjectCommit;

/// A condition a rule can check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// Holds from `from_ms` on (the start of a UTC day).
    DayComes {
        /// When it starts holding, unix milliseconds.
        from_ms: i64,
    },
    /// Holds while the file exists.
    FileExists(String),
    /// Holds once the file is gone.
    FileGone(String),
    /// Holds once a commit since the note touched the file.
    FileChanged(String),
    /// Holds once a commit message since the note contains the text (any case).
    CommitMentions(String),
}

/// What the project shows now, for one note.
pub struct ProjectNow<'a> {
    /// The time, unix milliseconds.
    pub now_ms: i64,
    /// The commits made since the note was written.
    pub commits: &'a [&'a ProjectCommit],
    /// Whether a file exists; `None` when the path may not be checked (outside the folder).
    pub exists: &'a dyn Fn(&str) -> Option<bool>,
}

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// Words that open a condition without changing it.
const OPENERS: &[&str] = &["as soon as ", "when ", "once ", "if "];

/// Before a day: the condition holds on it, or from the next one.
const ON_DAY: &[&str] = &["", "on", "by", "from", "it is", "the date is", "today is"];
const AFTER_DAY: &[&str] = &["after", "past", "it is after", "it is past"];
/// After a day: the same.
const DAY_COMES: &[&str] = &["", "arrives", "comes", "is reached"];
const DAY_PASSES: &[&str] = &["passes", "has passed", "is over", "is past"];

const COMMIT_OPENERS: &[&str] = &[
    "a commit mentions ",
    "a commit message mentions ",
    "a commit message contains ",
    "a commit message says ",
    "a commit says ",
    "a commit contains ",
    "commit message contains ",
    "commit message mentions ",
];

const EXISTS: &[&str] = &[
    "exists",
    "is created",
    "is added",
    "appears",
    "gets created",
];
const GONE: &[&str] = &[
    "is deleted",
    "is removed",
    "is gone",
    "no longer exists",
    "does not exist",
    "gets deleted",
    "disappears",
];
const CHANGED: &[&str] = &[
    "changes",
    "is changed",
    "is modified",
    "is edited",
    "is updated",
    "gets changed",
    "gets updated",
];

/// The rule `text` states, or `None` when it is in plain words a rule cannot check.
pub fn parse_condition(text: &str) -> Option<Condition> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = text.trim_end_matches('.');
    let lower = text.to_lowercase();
    let start = OPENERS
        .iter()
        .find(|opener| lower.starts_with(*opener))
        .map_or(0, |opener| opener.len());
    // Openers are ASCII, so where one ends in `lower` it ends in `text` too; `get` still
    // refuses a cut inside a character rather than panicking on unusual text.
    let (text, lower) = (text.get(start..)?, lower.get(start..)?);
    if let Some(opener) = COMMIT_OPENERS
        .iter()
        .find(|opener| lower.starts_with(*opener))
    {
        let mentioned = unquote(text.get(opener.len()..)?);
        return (!mentioned.is_empty()).then(|| Condition::CommitMentions(mentioned.to_owned()));
    }
    day_condition(lower).or_else(|| file_condition(text, lower))
}

fn day_condition(lower: &str) -> Option<Condition> {
    let words: Vec<&str> = lower.split(' ').collect();
    let (at, day) = words.iter().enumerate().find_map(|(at, word)| {
        let day = NaiveDate::parse_from_str(word.trim_matches(','), "%Y-%m-%d").ok()?;
        Some((at, day))
    })?;
    let before = words.get(..at)?.join(" ");
    let after = words.get(at + 1..)?.join(" ");
    let next_day = match (before.as_str(), after.as_str()) {
        (b, a) if ON_DAY.contains(&b) && DAY_COMES.contains(&a) => false,
        (b, a) if AFTER_DAY.contains(&b) && DAY_COMES.contains(&a) => true,
        (b, a) if ON_DAY.contains(&b) && DAY_PASSES.contains(&a) => true,
        _ => return None,
    };
    let start_ms = day.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis();
    Some(Condition::DayComes {
        from_ms: start_ms + if next_day { DAY_MS } else { 0 },
    })
}

fn file_condition(text: &str, lower: &str) -> Option<Condition> {
    let skip = ["the file ", "file "]
        .iter()
        .find(|opener| lower.starts_with(*opener))
        .map_or(0, |opener| opener.len());
    let text = text.get(skip..)?;
    let (path, verb) = text.split_once(' ')?;
    let verb = verb.to_lowercase();
    let verb = verb.as_str();
    let path = unquote(path);
    if !is_relative_path(path) {
        return None;
    }
    let path = path.trim_start_matches("./").to_owned();
    if EXISTS.contains(&verb) {
        Some(Condition::FileExists(path))
    } else if GONE.contains(&verb) {
        Some(Condition::FileGone(path))
    } else if CHANGED.contains(&verb) {
        Some(Condition::FileChanged(path))
    } else {
        None
    }
}

/// A path a note may name: relative, inside the project, with a folder or an extension.
fn is_relative_path(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.split('/').any(|part| part == "..")
        && (path.contains('/') || path.trim_start_matches('.').contains('.'))
        && path.chars().any(char::is_alphanumeric)
}

fn unquote(text: &str) -> &str {
    text.trim().trim_matches(['`', '"', '\''])
}

/// Why `condition` holds in `project`, or `None` while it does not.
pub fn holds(condition: &Condition, project: &ProjectNow<'_>) -> Option<String> {
    match condition {
        Condition::DayComes { from_ms } => {
            (project.now_ms >= *from_ms).then(|| format!("it is {} now", day_of(project.now_ms)))
        }
        Condition::FileExists(path) => {
            ((project.exists)(path) == Some(true)).then(|| format!("`{path}` exists"))
        }
        Condition::FileGone(path) => {
            ((project.exists)(path) == Some(false)).then(|| format!("`{path}` is gone"))
        }
        Condition::FileChanged(path) => project
            .commits
            .iter()
            .find(|commit| commit.files.iter().any(|file| names_file(file, path)))
            .map(|commit| format!("commit \"{}\" touched `{path}`", commit.subject)),
        Condition::CommitMentions(text) => {
            let wanted = text.to_lowercase();
            project
                .commits
                .iter()
                .find(|commit| {
                    commit.subject.to_lowercase().contains(&wanted)
                        || commit.body.to_lowercase().contains(&wanted)
                })
                .map(|commit| format!("commit \"{}\" mentions \"{text}\"", commit.subject))
        }
    }
}

/// Whether `file` (from git, relative to the root) is the file a note names as `path`, which
/// may leave out the folders above it (`Cargo.lock` for `crates/a/Cargo.lock` too).
fn names_file(file: &str, path: &str) -> bool {
    file == path || file.ends_with(&format!("/{path}"))
}

/// `YYYY-MM-DD` (UTC) of `ms`.
pub fn day_of(ms: i64) -> String {
    DateTime::from_timestamp_millis(ms).map_or_else(
        || format!("{ms} ms"),
        |at| at.format("%Y-%m-%d").to_string(),
    )
}

#[cfg(test)]
mod tests;
