//! Finds the recorded sessions in the shared data folder.

use std::path::PathBuf;

/// The shared data folder (see `mc_testdata::dir`).
pub fn dir() -> PathBuf {
    mc_testdata::dir()
}

/// The Claude Code capture, one parsed JSON object per line.
pub fn anthropic_capture() -> Vec<serde_json::Value> {
    let path = dir().join("anthropic-capture/claude-code-traffic.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).expect("capture line is JSON"))
        .collect()
}
