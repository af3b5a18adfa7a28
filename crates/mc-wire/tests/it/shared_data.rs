//! Finds the recorded sessions in the shared data folder.

use std::path::PathBuf;

/// The shared data folder: `MC_SHARED_DATA`, else `shared/data` beside the checkout.
///
/// A missing folder fails the test rather than skipping it: a corpus test that silently
/// checks nothing would pass for the wrong reason.
pub fn dir() -> PathBuf {
    let dir = match std::env::var_os("MC_SHARED_DATA") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data")),
    };
    assert!(
        dir.is_dir(),
        "shared data not found at {}; set MC_SHARED_DATA to the folder holding anthropic-capture/ and swe-trajectories/",
        dir.display()
    );
    dir
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
