//! Finds the recorded sessions in the shared data folder.

use std::path::{Path, PathBuf};

/// The shared data folder: `MC_SHARED_DATA`, else the first `shared/data` found beside the
/// checkout or one of its ancestors, else `/work/shared/data`.
///
/// A missing folder fails the test rather than skipping it: a corpus test that silently
/// checks nothing would pass for the wrong reason.
pub fn dir() -> PathBuf {
    let found = match std::env::var_os("MC_SHARED_DATA") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .map(|ancestor| ancestor.join("shared/data"))
            .chain([PathBuf::from("/work/shared/data")])
            .find(|candidate| candidate.join("anthropic-capture").is_dir()),
    };
    match found {
        Some(dir) if dir.is_dir() => dir,
        _ => panic!(
            "shared data not found (looked at $MC_SHARED_DATA, shared/data beside {} and its ancestors, /work/shared/data); \
             set MC_SHARED_DATA to the folder holding anthropic-capture/ and swe-trajectories/",
            env!("CARGO_MANIFEST_DIR")
        ),
    }
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
