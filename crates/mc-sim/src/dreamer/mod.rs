//! The simulator playing the dreamer's model: given the user message of a verifying call,
//! the `judge_memories` input a careful small model would write from the evidence shown;
//! given a consolidating call's, the merges ([`merge_answer`]); given a smart-note judging
//! call's, which conditions hold ([`notes_answer`]); given a rewriting call's, shorter texts
//! of its verbose memories ([`rewrite_answer`]); given an agent loop's step, its next calls
//! ([`step_answer`]).
//!
//! It judges only from the message, deterministically, so a test or a bench gets the same
//! verdicts every run: a memory whose named file is gone is archived; one whose stated value
//! sits next to its name with another value is updated to that value; one whose named
//! identifier appears nowhere is archived; anything else is kept (the search can miss what
//! is written differently, and keeping is the safe side).
//!
//! ```
//! use mc_core::dreamer::{Candidate, Evidence, parse_verdicts, verify_user_message, Verdict};
//! use mc_sim::dreamer::dreamer_answer;
//!
//! let gone = Candidate {
//!     memory_id: 4,
//!     category: "ARCHITECTURE".into(),
//!     content: "Parsing lives in src/old.rs".into(),
//!     evidence: vec![Evidence::File { path: "src/old.rs".into(), present: false }],
//! };
//! let answer = dreamer_answer(&verify_user_message(&[gone])).unwrap();
//! let verdicts = parse_verdicts(&answer, &[4]).unwrap();
//! assert!(matches!(verdicts[0], Verdict::Archive { memory_id: 4, .. }));
//! assert_eq!(dreamer_answer("Summarise this."), None);
//! ```

mod merge;
mod notes;
mod rewrite;
mod step;

use mc_core::dreamer::{Candidate, Evidence, Sighting, read_verify_message};
use serde_json::{Value, json};

pub use merge::merge_answer;
pub use notes::notes_answer;
pub use rewrite::rewrite_answer;
pub use step::step_answer;

/// The `judge_memories` input for the verifying user message `user_message`, or `None`
/// when the message is not one.
pub fn dreamer_answer(user_message: &str) -> Option<Value> {
    let candidates = read_verify_message(user_message)?;
    let verdicts: Vec<Value> = candidates.iter().map(judge).collect();
    Some(json!({ "verdicts": verdicts }))
}

fn judge(candidate: &Candidate) -> Value {
    let id = candidate.memory_id;
    let gone_file = gone_path(candidate);
    if let Some(path) = gone_file {
        return archive(id, format!("`{path}` is gone from the project"));
    }
    let changed = candidate
        .evidence
        .iter()
        .find_map(|evidence| match evidence {
            Evidence::Value {
                name,
                value,
                holds: false,
                seen_at,
            } => seen_at
                .iter()
                .find_map(|seen| value_in(seen, name))
                .filter(|current| current != value)
                .map(|current| (name, value, current)),
            _ => None,
        });
    if let Some((name, old, new)) = changed {
        return json!({
            "memory_id": id,
            "action": "update",
            "content": replace_word(&candidate.content, old, &new),
            "reason": format!("`{name}` is {new} in the code now, not {old}"),
        });
    }
    let missing_name = candidate
        .evidence
        .iter()
        .find_map(|evidence| match evidence {
            Evidence::Name { name, seen_at } if seen_at.is_empty() => Some(name),
            _ => None,
        });
    match missing_name {
        Some(name) => archive(id, format!("`{name}` appears nowhere in the project")),
        None => json!({ "memory_id": id, "action": "keep" }),
    }
}

/// The first file the candidate names that is gone.
fn gone_path(candidate: &Candidate) -> Option<&str> {
    candidate
        .evidence
        .iter()
        .find_map(|evidence| match evidence {
            Evidence::File {
                path,
                present: false,
            } => Some(path.as_str()),
            Evidence::File { .. } | Evidence::Name { .. } | Evidence::Value { .. } => None,
        })
}

fn archive(id: u64, reason: String) -> Value {
    json!({ "memory_id": id, "action": "archive", "reason": reason })
}

/// The value a line assigns to `name`: what follows the last `=` after it, else the first
/// `:` (`const MAX: u32 = 7;` gives `7`, `port: 4141` gives `4141`).
fn value_in(seen: &Sighting, name: &str) -> Option<String> {
    let after = &seen.text[seen.text.find(name)? + name.len()..];
    let assigned = match after.rfind('=') {
        Some(at) => &after[at + 1..],
        None => &after[after.find(':')? + 1..],
    };
    let value = assigned
        .trim()
        .trim_end_matches([';', ','])
        .trim()
        .trim_matches(['"', '\'']);
    (!value.is_empty() && !value.contains(char::is_whitespace)).then(|| value.to_owned())
}

/// `text` with the whole-word occurrences of `old` replaced by `new`.
fn replace_word(text: &str, old: &str, new: &str) -> String {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(old) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + old.len()..].chars().next();
        let whole = !before.is_some_and(is_word) && !after.is_some_and(is_word);
        out.push_str(&rest[..at]);
        out.push_str(if whole { new } else { old });
        rest = &rest[at + old.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use mc_core::dreamer::{Verdict, parse_verdicts, verify_user_message};

    use super::*;

    fn seen(text: &str) -> Sighting {
        Sighting {
            path: "src/net.rs".into(),
            line: 3,
            text: text.into(),
        }
    }

    fn verdict(candidate: Candidate) -> Verdict {
        let id = candidate.memory_id;
        let answer = dreamer_answer(&verify_user_message(&[candidate])).unwrap();
        parse_verdicts(&answer, &[id]).unwrap().remove(0)
    }

    #[test]
    fn a_changed_value_is_updated_from_the_line_that_holds_it_now() {
        let candidate = Candidate {
            memory_id: 7,
            category: "CONFIG_VALUES".into(),
            content: "MAX_RETRIES = 5 (5 tries at most)".into(),
            evidence: vec![Evidence::Value {
                name: "MAX_RETRIES".into(),
                value: "5".into(),
                holds: false,
                seen_at: vec![seen("pub const MAX_RETRIES: u32 = 7;")],
            }],
        };
        assert_eq!(
            verdict(candidate),
            Verdict::Update {
                memory_id: 7,
                content: "MAX_RETRIES = 7 (7 tries at most)".into(),
                reason: "`MAX_RETRIES` is 7 in the code now, not 5".into()
            }
        );
    }

    #[test]
    fn a_missing_name_is_archived_and_a_found_one_kept() {
        let name = |seen_at: Vec<Sighting>| Candidate {
            memory_id: 2,
            category: "NAMING".into(),
            content: "send_once sends without retrying".into(),
            evidence: vec![Evidence::Name {
                name: "send_once".into(),
                seen_at,
            }],
        };
        assert!(matches!(verdict(name(Vec::new())), Verdict::Archive { .. }));
        assert_eq!(
            verdict(name(vec![seen("fn send_once() {}")])),
            Verdict::Keep { memory_id: 2 }
        );
        assert_eq!(
            value_in(&seen("port: 4141"), "port").as_deref(),
            Some("4141")
        );
        assert_eq!(value_in(&seen("let port = \"a b\";"), "port"), None);
    }
}
