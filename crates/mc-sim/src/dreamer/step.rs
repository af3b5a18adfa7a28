//! The simulated dreamer driving its agent loop: from a step's message, the `dreamer_step`
//! input a careful small model would write next.
//!
//! For memories whose file is gone it first asks `git_log` of each old path, then reads the
//! logs it was shown: a rename (`R…\told\tnew`) updates the memory to the new path, anything
//! else archives it; then it finishes. It makes no more calls a step than a step runs, and
//! does not judge a memory twice. Any other loop (a docs loop) it finishes at once,
//! proposing nothing. It judges only from the message, so a test gets the same steps every
//! run; a test that needs other steps scripts them ([`crate::server::SimConfig::with_dreamer_steps`]).

use std::collections::BTreeMap;

use mc_core::dreamer::{
    CallShown, Candidate, MAX_CALLS_PER_STEP, read_step_message, read_verify_message,
};
use serde_json::{Value, json};

use super::gone_path;

/// The `dreamer_step` input for the step message `user_message`, or `None` when the message
/// is not a step's.
pub fn step_answer(user_message: &str) -> Option<Value> {
    let (task, steps) = read_step_message(user_message)?;
    let Some(candidates) = read_verify_message(&task) else {
        return Some(finish("nothing to change"));
    };
    let logs: BTreeMap<String, String> = steps
        .iter()
        .flatten()
        .filter_map(|shown| logged_path(shown).map(|path| (path, shown.result.clone())))
        .collect();
    let gone: Vec<(&Candidate, &str)> = candidates
        .iter()
        .filter_map(|candidate| gone_path(candidate).map(|path| (candidate, path)))
        .collect();
    let decided: Vec<u64> = steps
        .iter()
        .flatten()
        .filter(|shown| shown.result.starts_with("recorded"))
        .filter_map(|shown| shown.call.get("memory_id")?.as_u64())
        .collect();
    let mut calls: Vec<Value> = Vec::new();
    for (_, path) in &gone {
        let call = json!({ "tool": "git_log", "path": path });
        if !logs.contains_key(*path) && !calls.contains(&call) {
            calls.push(call);
        }
    }
    let mut undecided = 0;
    for (candidate, path) in &gone {
        if decided.contains(&candidate.memory_id) {
            continue;
        }
        match logs.get(*path) {
            Some(log) => calls.push(verdict(candidate, path, log)),
            None => undecided += 1,
        }
    }
    let all_asked = undecided == 0 && calls.len() < MAX_CALLS_PER_STEP;
    calls.truncate(MAX_CALLS_PER_STEP);
    if all_asked {
        calls.push(json!({ "tool": "finish", "reason": "every memory judged" }));
    }
    Some(json!({ "calls": calls }))
}

fn finish(reason: &str) -> Value {
    json!({ "calls": [{ "tool": "finish", "reason": reason }] })
}

/// The path of a `git_log` call.
fn logged_path(shown: &CallShown) -> Option<String> {
    if shown.call.get("tool")?.as_str()? != "git_log" {
        return None;
    }
    Some(shown.call.get("path")?.as_str()?.to_owned())
}

/// Update to the new path when `log` shows `path` renamed, else archive.
fn verdict(candidate: &Candidate, path: &str, log: &str) -> Value {
    let id = candidate.memory_id;
    let renamed = log.lines().find_map(|line| {
        let mut fields = line.split('\t');
        let status = fields.next()?;
        let (from, to) = (fields.next()?, fields.next()?);
        (status.starts_with('R') && from == path).then_some(to)
    });
    match renamed {
        Some(to) => json!({
            "tool": "update_memory",
            "memory_id": id,
            "content": candidate.content.replace(path, to),
            "reason": format!("`{path}` was renamed to `{to}`"),
        }),
        None => json!({
            "tool": "archive_memory",
            "memory_id": id,
            "reason": format!("`{path}` is gone from the project"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use mc_core::dreamer::{Evidence, Remaining, step_user_message, verify_user_message};

    use super::*;

    fn candidate(id: u64, path: &str) -> Candidate {
        Candidate {
            memory_id: id,
            category: "ARCHITECTURE".into(),
            content: format!("Parsing lives in {path}"),
            evidence: vec![Evidence::File {
                path: path.into(),
                present: false,
            }],
        }
    }

    #[test]
    fn logs_first_then_a_rename_updates_and_a_deletion_archives() {
        let task = verify_user_message(&[candidate(1, "src/old.rs"), candidate(2, "src/gone.rs")]);
        let left = Remaining {
            steps: 5,
            tokens: 9_000,
        };
        let first = step_answer(&step_user_message(&task, &[], left)).unwrap();
        assert_eq!(
            first,
            json!({"calls": [
                {"tool": "git_log", "path": "src/old.rs"},
                {"tool": "git_log", "path": "src/gone.rs"}
            ]})
        );
        let shown = vec![vec![
            CallShown {
                call: json!({"tool": "git_log", "path": "src/old.rs"}),
                result: "commit ab12 2026-12-01 Move parser\n\nR097\tsrc/old.rs\tsrc/parse/mod.rs"
                    .into(),
            },
            CallShown {
                call: json!({"tool": "git_log", "path": "src/gone.rs"}),
                result: "commit cd34 2026-12-02 Drop it\n\nD\tsrc/gone.rs".into(),
            },
        ]];
        let second = step_answer(&step_user_message(&task, &shown, left)).unwrap();
        assert_eq!(
            second,
            json!({"calls": [
                {"tool": "update_memory", "memory_id": 1, "content": "Parsing lives in src/parse/mod.rs",
                 "reason": "`src/old.rs` was renamed to `src/parse/mod.rs`"},
                {"tool": "archive_memory", "memory_id": 2, "reason": "`src/gone.rs` is gone from the project"},
                {"tool": "finish", "reason": "every memory judged"}
            ]})
        );
        let docs = step_user_message("Project docs to keep current", &[], left);
        assert_eq!(step_answer(&docs), Some(finish("nothing to change")));
        assert_eq!(step_answer("Memories to check"), None);
    }
}
