//! "Every tool result Claude Code produced is in the store": the raw log is the truth
//! (DESIGN §4.4), so whatever the engine dropped, folded or summarised upstream, each result
//! the client sent must be stored whole in some session of the proxy's store.

use std::collections::HashMap;
use std::path::Path;

use mc_core::{Part, joined_texts};
use mc_store::Store;

use super::transcript::ToolResult;

/// Asserts that each of `results` (from Claude Code's transcript) is stored in the store at
/// `db` (`$MAGIC_CONTEXT_DATA_DIR/context.db`): a stored `Part::ToolResult` with the same
/// call id, whose text contains each of the transcript's text blocks. Containment rather than
/// equality, so a store that keeps the engine's `§N§ ` tag on a result still passes, while a
/// result stored cut short or as a drop placeholder fails.
///
/// Reads through mc-store's read API while the proxy may still run (reads see one snapshot
/// and never wait for the writer). Fails naming every missing or altered result.
pub fn assert_tool_results_stored(db: &Path, results: &[ToolResult]) {
    assert!(db.is_file(), "the proxy wrote no store at {}", db.display());
    let stored = stored_tool_results(db);
    let problems: Vec<String> = results
        .iter()
        .filter_map(|result| problem(result, &stored))
        .collect();
    assert!(
        problems.is_empty(),
        "{} of {} tool results are not in the store ({} stored results):\n{}",
        problems.len(),
        results.len(),
        stored.len(),
        problems.join("\n")
    );
}

/// Every stored tool result, by call id, as the texts of each stored copy (a result appears
/// in each session that holds it, e.g. a fork and its parent).
fn stored_tool_results(db: &Path) -> HashMap<String, Vec<String>> {
    let store = Store::open(db).unwrap();
    store
        .read(|tx| {
            let mut stored: HashMap<String, Vec<String>> = HashMap::new();
            for session in tx.list_sessions(usize::MAX)? {
                for row in tx.messages(&session.id, ..)? {
                    for part in row.message.parts {
                        if let Part::ToolResult {
                            call_id, content, ..
                        } = part
                        {
                            stored
                                .entry(call_id)
                                .or_default()
                                .push(joined_texts(&content));
                        }
                    }
                }
            }
            Ok(stored)
        })
        .unwrap()
}

/// Why `result` does not count as stored, if it does not.
fn problem(result: &ToolResult, stored: &HashMap<String, Vec<String>>) -> Option<String> {
    let id = &result.tool_use_id;
    let Some(copies) = stored.get(id) else {
        return Some(format!("{id}: no stored tool result has this id"));
    };
    let whole = |copy: &String| result.texts.iter().all(|text| copy.contains(text.as_str()));
    if copies.iter().any(whole) {
        return None;
    }
    let expected: String = result.texts.concat().chars().take(80).collect();
    let found: String = copies[0].chars().take(80).collect();
    Some(format!(
        "{id}: stored text differs; expected {expected:?}…, stored {found:?}…"
    ))
}

#[test]
fn finds_results_in_any_session_and_names_the_missing_ones() {
    use mc_core::{Host, Message, Role, SessionId};
    use mc_store::NewSession;

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("context.db");
    let store = Store::open(&db).unwrap();
    let id = SessionId::new("s-1").unwrap();
    let result = Message::new(
        Role::User,
        vec![Part::ToolResult {
            call_id: "toolu_1".into(),
            content: vec![Part::text("§3§ seq output 1 2 3")],
            is_error: false,
        }],
    );
    store
        .write(|tx| {
            let session = NewSession {
                id: id.clone(),
                host: Host::ClaudeCode,
                project: None,
            };
            tx.upsert_session(&session, 1)?;
            tx.append_messages(&id, 0, &[result], 1)
        })
        .unwrap();
    drop(store);
    let stored = stored_tool_results(&db);
    let seq = ToolResult {
        tool_use_id: "toolu_1".into(),
        texts: vec!["seq output 1 2 3".into()],
        is_error: false,
    };
    assert_eq!(problem(&seq, &stored), None);
    let missing = ToolResult {
        tool_use_id: "toolu_2".into(),
        ..seq.clone()
    };
    assert_eq!(
        problem(&missing, &stored).as_deref(),
        Some("toolu_2: no stored tool result has this id")
    );
    let altered = ToolResult {
        texts: vec!["seq output 1 2 3 4".into()],
        ..seq
    };
    assert!(
        problem(&altered, &stored)
            .unwrap()
            .contains("stored text differs")
    );
}

/// `magic-context doctor --json` over the store in `data`: it exits 0, and its hash-chain check
/// read `sessions` sessions holding `messages` messages.
pub fn assert_doctor_verifies_chains(
    machine: &super::Machine,
    data: &Path,
    sessions: u64,
    messages: u64,
) {
    let doctor = machine.run(
        &["doctor", "--json"],
        &[("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())],
    );
    assert_eq!(doctor.code, Some(0), "{}", doctor.stdout);
    let report = doctor.json();
    assert_eq!(report["chains"]["sessions_checked"], sessions);
    assert_eq!(report["chains"]["messages_checked"], messages);
}
