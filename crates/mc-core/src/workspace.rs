//! Who shares memories with whom, once each workspace root is identified as a project.
//!
//! The configuration names members by folder ([`crate::config::WorkspaceConfig`]); the
//! store keys memories by [`ProjectId`]. Whoever can look at folders (the proxy, the command
//! line) identifies each root and builds [`Workspaces`]; from then on everything here is a
//! pure lookup, so the head and search ask the same question and get the same answer.
//!
//! ```
//! use mc_core::ProjectId;
//! use mc_core::head::MemoryCategory;
//! use mc_core::workspace::{WorkspaceMember, Workspaces};
//!
//! let api = ProjectId::new("git:a1").unwrap();
//! let web = ProjectId::new("git:b2").unwrap();
//! let member = |project: &ProjectId, root: &str| WorkspaceMember {
//!     workspace: "shop".into(),
//!     project: project.clone(),
//!     root: root.into(),
//!     categories: vec![MemoryCategory::Architecture],
//! };
//! let workspaces = Workspaces::new(vec![member(&api, "~/src/api"), member(&web, "~/src/web")]);
//! let shared = workspaces.shared_with(&api);
//! assert_eq!(shared.len(), 1);
//! assert_eq!((shared[0].project.as_str(), shared[0].root.as_str()), ("git:b2", "~/src/web"));
//! assert!(workspaces.shared_with(&ProjectId::new("git:c3").unwrap()).is_empty());
//! ```

use std::collections::BTreeMap;

use crate::head::MemoryCategory;
use crate::session::ProjectId;

/// One project's place in one workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceMember {
    /// The workspace's name.
    pub workspace: String,
    /// The project the root was identified as.
    pub project: ProjectId,
    /// The root as configured: how the prompt names the project.
    pub root: String,
    /// What the workspace shares, in [`MemoryCategory::ALL`] order.
    pub categories: Vec<MemoryCategory>,
}

/// Another project whose memories a project may read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedSource {
    /// The project that owns the memories.
    pub project: ProjectId,
    /// Its root as configured, which names it for the model.
    pub root: String,
    /// The workspace that joins the two (the first by name when several do).
    pub workspace: String,
    /// The categories shared, over every workspace the two have in common, in
    /// [`MemoryCategory::ALL`] order.
    pub categories: Vec<MemoryCategory>,
}

impl SharedSource {
    /// Whether memories of `category` are shared.
    pub fn shares(&self, category: MemoryCategory) -> bool {
        self.categories.contains(&category)
    }
}

/// Every workspace membership known to the engine; empty when none is configured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Workspaces {
    members: Vec<WorkspaceMember>,
}

impl Workspaces {
    /// The memberships, in any order; a project listed twice in one workspace counts once.
    pub fn new(members: Vec<WorkspaceMember>) -> Self {
        Self { members }
    }

    /// Whether no workspace has a member.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Every membership, as given.
    pub fn members(&self) -> &[WorkspaceMember] {
        &self.members
    }

    /// The other projects `project` reads memories of, by root then project id so every
    /// caller sees them in the same order. A project is never its own source.
    pub fn shared_with(&self, project: &ProjectId) -> Vec<SharedSource> {
        let joined: Vec<&WorkspaceMember> = self
            .members
            .iter()
            .filter(|member| &member.project == project)
            .collect();
        let mut sources: BTreeMap<&ProjectId, SharedSource> = BTreeMap::new();
        for own in &joined {
            let peers = self
                .members
                .iter()
                .filter(|member| member.workspace == own.workspace && &member.project != project);
            for peer in peers {
                let source = sources
                    .entry(&peer.project)
                    .or_insert_with(|| SharedSource {
                        project: peer.project.clone(),
                        root: peer.root.clone(),
                        workspace: peer.workspace.clone(),
                        categories: Vec::new(),
                    });
                if peer.workspace < source.workspace {
                    source.workspace.clone_from(&peer.workspace);
                    source.root.clone_from(&peer.root);
                }
                source.categories.extend(peer.categories.iter().copied());
            }
        }
        let mut sources: Vec<SharedSource> = sources.into_values().collect();
        for source in &mut sources {
            source.categories.sort();
            source.categories.dedup();
        }
        sources.sort_by(|a, b| (&a.root, &a.project).cmp(&(&b.root, &b.project)));
        sources
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(name: &str) -> ProjectId {
        ProjectId::new(name).unwrap()
    }

    fn member(
        workspace: &str,
        project: &str,
        root: &str,
        categories: &[MemoryCategory],
    ) -> WorkspaceMember {
        WorkspaceMember {
            workspace: workspace.into(),
            project: id(project),
            root: root.into(),
            categories: categories.to_vec(),
        }
    }

    #[test]
    fn a_peer_in_two_workspaces_shares_the_union_once() {
        use MemoryCategory::{Architecture, Naming, ProjectRules};
        let workspaces = Workspaces::new(vec![
            member("zeta", "git:api", "~/api", &[Naming]),
            member("zeta", "git:web", "~/web-z", &[Naming]),
            member("alpha", "git:api", "~/api", &[Architecture, ProjectRules]),
            member("alpha", "git:web", "~/web", &[Architecture, ProjectRules]),
            member("alpha", "git:cli", "~/cli", &[Architecture, ProjectRules]),
            member("other", "git:lone", "~/lone", &[Naming]),
        ]);
        let shared = workspaces.shared_with(&id("git:api"));
        assert_eq!(
            shared,
            vec![
                SharedSource {
                    project: id("git:cli"),
                    root: "~/cli".into(),
                    workspace: "alpha".into(),
                    categories: vec![ProjectRules, Architecture],
                },
                SharedSource {
                    project: id("git:web"),
                    root: "~/web".into(),
                    workspace: "alpha".into(),
                    categories: vec![ProjectRules, Architecture, Naming],
                },
            ]
        );
        assert!(shared[1].shares(Naming));
        assert!(!shared[0].shares(Naming));
        assert!(workspaces.shared_with(&id("git:lone")).is_empty());
    }
}
