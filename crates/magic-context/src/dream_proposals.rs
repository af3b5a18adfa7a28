//! `dream --show-proposals`: the doc updates `maintain_docs` proposed, printed with where
//! they are.
//!
//! Proposals are unified diffs under the data directory (`proposals/<project>/<DOC>.patch`),
//! never applied by the dreamer; the user reads them here and applies one with `git apply`
//! in the project's folder. `--json` prints `{"proposals_dir": DIR, "proposals": [{"project",
//! "project_folder", "doc", "path", "patch"}, …]}`, `project` being the id when a project the
//! proxy served has that folder name, else the folder name itself.

use std::path::Path;

use mc_core::ProjectId;
use mc_dreamer::{DocProposal, PROPOSALS_DIR, project_key, read_proposals};
use serde_json::{Value, json};

use crate::status_viewpoint::Viewpoint;

/// The proposals under `data_dir`, of `project` only when given, as text or JSON.
pub fn show_proposals(
    data_dir: &Path,
    project: Option<&ProjectId>,
    view: &Viewpoint,
    as_json: bool,
) -> anyhow::Result<String> {
    let proposals = read_proposals(data_dir, project)?;
    let dir = data_dir.join(PROPOSALS_DIR);
    let known = |proposal: &DocProposal| {
        view.folders
            .keys()
            .chain(view.here.as_ref().map(|(here, _)| here))
            .find(|id| project_key(id) == proposal.project_key)
            .cloned()
    };
    if as_json {
        let listed: Vec<Value> = proposals
            .iter()
            .map(|proposal| {
                let id = known(proposal);
                json!({
                    "project": id.as_ref().map_or(proposal.project_key.as_str(), ProjectId::as_str),
                    "project_folder": id.as_ref().and_then(|id| view.folder(id)),
                    "doc": proposal.doc,
                    "path": proposal.path.display().to_string(),
                    "patch": proposal.text,
                })
            })
            .collect();
        return crate::output::pretty(&json!({
            "proposals_dir": dir.display().to_string(),
            "proposals": listed,
        }));
    }
    if proposals.is_empty() {
        return Ok(format!(
            "no doc proposals under {} (`magic-context dream --task maintain_docs` makes them)\n",
            dir.display()
        ));
    }
    let mut out = format!(
        "doc proposals under {} (none is applied: apply one with `git apply FILE` in its project's folder):\n",
        dir.display()
    );
    for proposal in &proposals {
        let project = known(proposal)
            .map_or_else(|| proposal.project_key.clone(), |id| view.project_name(&id));
        out.push_str(&format!(
            "\n{} in {project}: {}\n{}",
            proposal.doc,
            proposal.path.display(),
            proposal.text
        ));
        if !proposal.text.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}
