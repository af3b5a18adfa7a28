//! Keys only the user file may set.
//!
//! The project file lives in the project's folder, written by whoever wrote the project: a
//! repository cloned from anywhere. Most keys only tune how its own sessions run, but
//! `workspaces` decides which projects read each other's memories, so a project file
//! setting it could pull another project's facts into its prompts, and `team_store` decides
//! where the project's memories are sent. Such a key is reported
//! and dropped from the project layer; the user file's value stands.

use std::path::Path;

use serde_json::{Map, Value};

use crate::diagnostic::Diagnostic;

/// The top-level keys a project file may not set, and what setting one there could do.
pub const USER_ONLY_KEYS: [(&str, &str); 2] = [
    ("workspaces", "join other projects' memories"),
    ("team_store", "send its user's memories to a server"),
];

/// `document` (a project file's) without the user-only keys, and one diagnostic per key
/// removed.
pub fn without_user_only(
    document: &Map<String, Value>,
    file: &Path,
) -> (Map<String, Value>, Vec<Diagnostic>) {
    let mut kept = document.clone();
    let mut diagnostics = Vec::new();
    for (key, risk) in USER_ONLY_KEYS {
        if kept.remove(key).is_some() {
            diagnostics.push(Diagnostic {
                file: Some(file.to_path_buf()),
                key: Some(key.to_owned()),
                reason: format!(
                    "`{key}` is read from the user config only (`magic-context config show` \
                     names it): a project's own file cannot {risk}"
                ),
            });
        }
    }
    (kept, diagnostics)
}
