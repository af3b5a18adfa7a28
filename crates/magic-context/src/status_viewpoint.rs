//! How `status` names what it shows, relative to where and when it runs.

use std::path::PathBuf;

use mc_core::ProjectId;

/// What the text is read against: the time now, and the folder `status` runs in, whose
/// project's sessions are named by that folder, as the user knows it, instead of by the
/// project's id (`git:…`, `path:…`, which only the store needs).
pub struct Viewpoint {
    /// Now, in unix milliseconds, for ages ("2h ago").
    pub now_ms: i64,
    /// The folder `status` runs in and its project, when it belongs to one.
    pub here: Option<(ProjectId, PathBuf)>,
}

impl Viewpoint {
    /// The current folder and its project, when it belongs to one.
    pub fn current_folder() -> Option<(ProjectId, PathBuf)> {
        let folder = std::env::current_dir().ok()?;
        let project = mc_proxy::identify_project(&folder)?;
        Some((project, std::fs::canonicalize(&folder).unwrap_or(folder)))
    }

    /// How a session's project is named.
    pub fn project_name(&self, project: &ProjectId) -> String {
        match &self.here {
            Some((here, folder)) if here == project => folder.display().to_string(),
            _ => project.as_str().to_owned(),
        }
    }
}
