//! The models each project's sessions last called with, lent to the dreamer.
//!
//! By default the dreamer asks what the historian asks: the session's own upstream, with the
//! credentials of the call, on the provider's small model (DESIGN §5). A nightly run has no
//! call of its own, so the proxy keeps, per project, the historian's endpoints of the
//! newest call in that project (the key inside is a [`mc_core::Secret`], in memory only,
//! never stored or logged; a newer call replaces it, so a rotated key is picked up). A
//! project no session called since the proxy started has none.

use std::collections::HashMap;
use std::sync::Mutex;

use mc_core::ProjectId;
use mc_llm::ModelEndpoint;

/// Each project's newest endpoints.
#[derive(Default)]
pub struct DreamerCredentials {
    by_project: Mutex<HashMap<ProjectId, Vec<ModelEndpoint>>>,
}

impl DreamerCredentials {
    /// Keeps `endpoints` as `project`'s, replacing older ones.
    pub fn remember(&self, project: &ProjectId, endpoints: &[ModelEndpoint]) {
        if let Ok(mut by_project) = self.by_project.lock() {
            by_project.insert(project.clone(), endpoints.to_vec());
        }
    }

    /// `project`'s endpoints, when one of its sessions called.
    pub fn of(&self, project: &ProjectId) -> Option<Vec<ModelEndpoint>> {
        self.by_project.lock().ok()?.get(project).cloned()
    }
}

#[cfg(test)]
mod tests {
    use mc_core::Secret;
    use mc_llm::Wire;

    use super::*;

    #[test]
    fn the_newest_call_of_a_project_wins() {
        let credentials = DreamerCredentials::default();
        let project = ProjectId::new("git:abc").unwrap();
        let endpoint = |key: &str| {
            ModelEndpoint::new(
                Wire::Anthropic,
                "http://up",
                "claude-haiku-4-5",
                Some(Secret::new(key)),
            )
        };
        assert!(credentials.of(&project).is_none());
        credentials.remember(&project, &[endpoint("old")]);
        credentials.remember(&project, &[endpoint("new")]);
        let kept = credentials.of(&project).unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].api_key.as_ref().map(Secret::expose), Some("new"));
        assert!(!format!("{kept:?}").contains("new"), "keys never print");
    }
}
