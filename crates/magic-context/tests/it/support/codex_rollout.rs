//! What Codex itself recorded: its session rollout, one JSON entry a line, at
//! `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`.
//!
//! Each model item Codex kept is a `response_item` entry whose `payload` is the item as it
//! goes on the Responses wire; a tool result is a `function_call_output` payload whose
//! `output` is the text Codex sends upstream (a string, or a list of `input_text` parts).
//! When Codex compacts its own history it records a `compacted` entry, and on the built-in
//! provider a `compaction` item.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::transcript::ToolResult;

/// The one rollout under `codex_home`, for a `codex exec` run (one thread).
pub fn rollout_file(codex_home: &Path) -> PathBuf {
    let mut files = Vec::new();
    collect_rollouts(&codex_home.join("sessions"), &mut files);
    assert_eq!(files.len(), 1, "expected one Codex rollout: {files:?}");
    files.remove(0)
}

fn collect_rollouts(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_rollouts(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "jsonl") {
            files.push(path);
        }
    }
}

/// The rollout's entries, in order.
pub fn entries(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Every tool result Codex produced, in order.
pub fn tool_results(entries: &[Value]) -> Vec<ToolResult> {
    entries
        .iter()
        .filter(|entry| entry["type"] == "response_item")
        .map(|entry| &entry["payload"])
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| ToolResult {
            tool_use_id: item["call_id"].as_str().unwrap_or_default().to_owned(),
            texts: output_texts(&item["output"]),
            is_error: false,
        })
        .collect()
}

/// The texts of an output: a string is one text, a list gives its parts' texts.
fn output_texts(output: &Value) -> Vec<String> {
    match output {
        Value::String(text) => vec![text.clone()],
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part["text"].as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// The entries that record Codex compacting its own history: a `compacted` entry, or a
/// `compaction` item kept in place of the history.
pub fn own_compactions(entries: &[Value]) -> Vec<&Value> {
    entries
        .iter()
        .filter(|entry| {
            entry["type"] == "compacted"
                || (entry["type"] == "response_item" && entry["payload"]["type"] == "compaction")
        })
        .collect()
}
