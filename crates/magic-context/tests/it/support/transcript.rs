//! What Claude Code itself recorded: its session transcript, one JSON entry a line, at
//! `$HOME/.claude/projects/<escaped cwd>/<session id>.jsonl`.
//!
//! The tool results in it are the client's truth: each is a `tool_result` block in the
//! `message.content` of a `user` entry, its `content` either a string or a list of blocks.
//! On Claude Code 2.1 the transcript's result text is byte for byte what Claude Code sends
//! upstream (compared on this script's results by capturing the requests).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// One tool result Claude Code produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The `tool_use_id` it answers.
    pub tool_use_id: String,
    /// Its text blocks (a string content is one block); empty for a result with no text.
    pub texts: Vec<String>,
    /// Whether Claude Code marked it as an error.
    pub is_error: bool,
}

/// The one session transcript under `home`, for a `claude -p` run (one session).
pub fn session_file(home: &Path) -> PathBuf {
    let projects = home.join(".claude/projects");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&projects)
        .unwrap_or_else(|error| {
            panic!("no Claude Code projects at {}: {error}", projects.display())
        })
        .flat_map(|project| std::fs::read_dir(project.unwrap().path()).unwrap())
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "expected one session transcript: {files:?}");
    files.remove(0)
}

/// Every tool result in the transcript at `path`, in order, each id once.
pub fn tool_results(path: &Path) -> Vec<ToolResult> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut results: Vec<ToolResult> = Vec::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let entry: Value = serde_json::from_str(line).unwrap();
        if entry["type"] != "user" {
            continue;
        }
        let Some(blocks) = entry["message"]["content"].as_array() else {
            continue;
        };
        for block in blocks.iter().filter(|block| block["type"] == "tool_result") {
            let result = ToolResult {
                tool_use_id: block["tool_use_id"].as_str().unwrap().to_owned(),
                texts: texts(&block["content"]),
                is_error: block["is_error"] == true,
            };
            if !results
                .iter()
                .any(|seen| seen.tool_use_id == result.tool_use_id)
            {
                results.push(result);
            }
        }
    }
    results
}

/// The text of every API error Claude Code recorded in the transcript at `path`, in order: an
/// `assistant` entry marked `isApiErrorMessage` that stands in for a model answer the provider
/// (or a proxy) refused, e.g. "Prompt is too long".
pub fn api_errors(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|entry| entry["type"] == "assistant" && entry["isApiErrorMessage"] == true)
        .map(|entry| match &entry["message"]["content"] {
            Value::String(text) => text.clone(),
            content => texts(content).concat(),
        })
        .collect()
}

fn texts(content: &Value) -> Vec<String> {
    match content {
        Value::String(text) => vec![text.clone()],
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block["text"].as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

#[test]
fn reads_string_and_block_results_once_each() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let lines = [
        r#"{"type":"queue-operation"}"#,
        r#"{"type":"user","message":{"role":"user","content":"hi"}}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"Exit code 1","is_error":true}]}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"a"},{"type":"image"}]}]}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":"again"}]}}"#,
    ];
    std::fs::write(&path, lines.join("\n")).unwrap();
    assert_eq!(
        tool_results(&path),
        [
            ToolResult {
                tool_use_id: "t1".into(),
                texts: vec!["Exit code 1".into()],
                is_error: true,
            },
            ToolResult {
                tool_use_id: "t2".into(),
                texts: vec!["a".into()],
                is_error: false,
            },
        ]
    );
    assert!(api_errors(&path).is_empty());
}

#[test]
fn reads_the_api_errors_claude_code_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let lines = [
        r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Reading."}]}}"#,
        r#"{"type":"assistant","isApiErrorMessage":true,"message":{"content":[{"type":"text","text":"Prompt is too long"}]}}"#,
        r#"{"type":"user","isApiErrorMessage":true,"message":{"content":"not an answer"}}"#,
    ];
    std::fs::write(&path, lines.join("\n")).unwrap();
    assert_eq!(api_errors(&path), ["Prompt is too long"]);
}
