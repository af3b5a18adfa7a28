//! Identifying the configured workspaces' member roots as projects.
//!
//! The configuration names members by folder; memories are stored by project identity. A
//! root is identified exactly as a client's working directory is ([`identify`]): the
//! repository's root commit, else the canonical path, so a member named by any folder of
//! its repository is the project its sessions store memories under. `~` stands for the
//! home folder. A root that names nothing yet (not a directory, or `git` gave no answer)
//! shares nothing and is reported; two roots naming one project count once.

use std::path::{Path, PathBuf};

use mc_core::config::WorkspacesConfig;
use mc_core::workspace::{WorkspaceMember, Workspaces};

use crate::project::identify;

/// A configured root that could not be identified as a project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownMember {
    /// The workspace listing it.
    pub workspace: String,
    /// The root as configured.
    pub root: String,
}

impl std::fmt::Display for UnknownMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "workspace `{}`: `{}` is not a folder this machine can identify as a project; \
             it shares nothing until it exists (restart the proxy after creating it)",
            self.workspace, self.root
        )
    }
}

/// Every configured member identified as a project, and the roots that could not be.
/// `home` expands a leading `~`; without one such roots are unknown.
pub fn identify_workspaces(
    config: &WorkspacesConfig,
    home: Option<&Path>,
) -> (Workspaces, Vec<UnknownMember>) {
    let mut members: Vec<WorkspaceMember> = Vec::new();
    let mut unknown = Vec::new();
    for (name, workspace) in config {
        for root in &workspace.projects {
            let project = expand_home(root, home).and_then(|folder| identify(&folder));
            let Some(project) = project else {
                unknown.push(UnknownMember {
                    workspace: name.clone(),
                    root: root.clone(),
                });
                continue;
            };
            let listed = members
                .iter()
                .any(|member| member.workspace == *name && member.project == project);
            if !listed {
                members.push(WorkspaceMember {
                    workspace: name.clone(),
                    project,
                    root: root.clone(),
                    categories: workspace.categories.clone(),
                });
            }
        }
    }
    (Workspaces::new(members), unknown)
}

/// `root` with a leading `~` replaced by `home`; `None` when it needs a home there is not.
fn expand_home(root: &str, home: Option<&Path>) -> Option<PathBuf> {
    match root.strip_prefix('~') {
        None => Some(PathBuf::from(root)),
        Some(rest) => {
            let home = home?;
            Some(match rest.strip_prefix('/') {
                Some(inside) => home.join(inside),
                None => home.to_path_buf(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use mc_core::config::WorkspaceConfig;
    use mc_core::head::MemoryCategory;

    use super::*;

    #[test]
    fn roots_are_identified_like_working_directories() {
        let home = tempfile::tempdir().unwrap();
        let api = home.path().join("src/api");
        let web = home.path().join("src/web");
        std::fs::create_dir_all(api.join("deep")).unwrap();
        std::fs::create_dir_all(&web).unwrap();
        let mut config = WorkspacesConfig::new();
        config.insert(
            "shop".to_owned(),
            WorkspaceConfig {
                projects: vec![
                    "~/src/api".to_owned(),
                    api.join("deep/..").display().to_string(),
                    web.display().to_string(),
                    "~/src/missing".to_owned(),
                ],
                categories: vec![MemoryCategory::Naming],
            },
        );
        let (workspaces, unknown) = identify_workspaces(&config, Some(home.path()));
        let members = workspaces.members();
        assert_eq!(members.len(), 2, "{members:?}");
        assert_eq!(Some(&members[0].project), identify(&api).as_ref());
        assert_eq!(members[0].root, "~/src/api");
        assert_eq!(Some(&members[1].project), identify(&web).as_ref());
        assert_eq!(members[1].categories, [MemoryCategory::Naming]);
        assert_eq!(
            unknown,
            [UnknownMember {
                workspace: "shop".to_owned(),
                root: "~/src/missing".to_owned()
            }]
        );
        let (_, without_home) = identify_workspaces(&config, None);
        assert_eq!(without_home.len(), 2);
    }
}
