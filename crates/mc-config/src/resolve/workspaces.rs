//! Checking `workspaces`: each workspace's name, member roots and shared categories.
//!
//! A workspace with any bad part is left out whole, with every problem reported at its own
//! key (`workspaces.shop.projects.1`): a half-checked workspace could share memories with a
//! project the user never meant to name, or share categories they meant to keep (the
//! screening drops the rest of a workspace whose key it refused, for the same reason). That
//! a project file may not set the section at all is the loader's rule (`user_only.rs`),
//! since only the loader knows which file a value came from.

use std::collections::BTreeMap;

use mc_core::config::{WorkspaceConfig, WorkspacesConfig, normalise_root, workspace_name_problem};
use mc_core::head::MemoryCategory;

use super::{Checker, key};
use crate::key_path::KeyPath;
use crate::raw::RawWorkspace;

impl Checker {
    pub(super) fn workspaces(&mut self, raw: BTreeMap<String, RawWorkspace>) -> WorkspacesConfig {
        let mut checked = WorkspacesConfig::new();
        for (name, workspace) in raw {
            let at = key(&["workspaces"]).child(name.clone());
            if let Some(reason) = workspace_name_problem(&name) {
                self.reject(at, reason);
                continue;
            }
            let projects = self.workspace_projects(&at.child("projects"), workspace.projects);
            let categories =
                self.workspace_categories(&at.child("categories"), workspace.categories);
            if let (Some(projects), Some(categories)) = (projects, categories) {
                checked.insert(
                    name,
                    WorkspaceConfig {
                        projects,
                        categories,
                    },
                );
            }
        }
        checked
    }

    /// The tidied roots, each once, or `None` after reporting what is wrong.
    fn workspace_projects(
        &mut self,
        at: &KeyPath,
        raw: Option<Vec<String>>,
    ) -> Option<Vec<String>> {
        let Some(raw) = raw else {
            self.reject(
                at.clone(),
                "list the workspace's project roots, at least two, e.g. [\"~/src/api\", \"~/src/web\"]",
            );
            return None;
        };
        let mut roots: Vec<String> = Vec::with_capacity(raw.len());
        let mut sound = true;
        for (index, written) in raw.iter().enumerate() {
            match normalise_root(written) {
                Err(reason) => {
                    self.reject(at.child(index.to_string()), reason);
                    sound = false;
                }
                Ok(root) => {
                    match roots.iter().position(|seen| *seen == root) {
                        Some(first) => {
                            self.reject(
                            at.child(index.to_string()),
                            format!("`{root}` is already listed (entry {first}); list each project once"),
                        );
                            sound = false;
                        }
                        None => roots.push(root),
                    }
                }
            }
        }
        if sound && roots.len() < 2 {
            self.reject(
                at.clone(),
                format!(
                    "a workspace shares memories between projects: list at least two roots, not {}",
                    roots.len()
                ),
            );
            sound = false;
        }
        sound.then_some(roots)
    }

    /// The categories in rendering order (all five when unset), or `None` after reporting
    /// what is wrong.
    fn workspace_categories(
        &mut self,
        at: &KeyPath,
        raw: Option<Vec<String>>,
    ) -> Option<Vec<MemoryCategory>> {
        let Some(raw) = raw else {
            return Some(WorkspaceConfig::DEFAULT_CATEGORIES.to_vec());
        };
        if raw.is_empty() {
            self.reject(
                at.clone(),
                "list at least one category, or leave `categories` out to share all five",
            );
            return None;
        }
        let mut categories = Vec::with_capacity(raw.len());
        let mut sound = true;
        for (index, name) in raw.iter().enumerate() {
            match MemoryCategory::parse(name) {
                Some(category) => categories.push(category),
                None => {
                    let names: Vec<&str> = MemoryCategory::ALL.iter().map(|c| c.as_str()).collect();
                    self.reject(
                        at.child(index.to_string()),
                        format!("unknown memory category `{name}`; use {}", names.join(", ")),
                    );
                    sound = false;
                }
            }
        }
        categories.sort();
        categories.dedup();
        sound.then_some(categories)
    }
}
