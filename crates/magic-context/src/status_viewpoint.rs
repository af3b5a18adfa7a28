//! How `status` names what it shows, relative to where and when it runs.

use std::collections::HashMap;
use std::path::PathBuf;

use mc_core::ProjectId;

/// What the text is read against: the time now, the folder `status` runs in, and the
/// folders the proxy saw projects in: a session's project is named by its folder, as the
/// user knows it, instead of by the project's id (`git:…`, `path:…`, which only the store
/// needs); the folder `status` runs in first, then the one the store recorded.
pub struct Viewpoint {
    /// Now, in unix milliseconds, for ages ("2h ago").
    pub now_ms: i64,
    /// The folder `status` runs in and its project, when it belongs to one.
    pub here: Option<(ProjectId, PathBuf)>,
    /// The folder each project was last seen in by the proxy.
    pub folders: HashMap<ProjectId, String>,
}

impl Viewpoint {
    /// The current folder and its project, when it belongs to one.
    pub fn current_folder() -> Option<(ProjectId, PathBuf)> {
        let folder = std::env::current_dir().ok()?;
        let project = mc_proxy::identify_project(&folder)?;
        Some((project, std::fs::canonicalize(&folder).unwrap_or(folder)))
    }

    /// How a session's project is named: by its folder when one is known, else by its id.
    pub fn project_name(&self, project: &ProjectId) -> String {
        self.folder(project)
            .unwrap_or_else(|| project.as_str().to_owned())
    }

    /// The folder a project is known by: the one `status` runs in when it is that
    /// project's, else the one the proxy last saw it in.
    pub fn folder(&self, project: &ProjectId) -> Option<String> {
        match &self.here {
            Some((here, folder)) if here == project => Some(folder.display().to_string()),
            _ => self.folders.get(project).cloned(),
        }
    }
}
