//! Where `maintain_docs` leaves its proposals: one unified diff per doc under the data
//! directory (`proposals/<project>/<DOC>.patch`, beside the store), never in the project.
//!
//! A proposal is a file the user reads (`magic-context dream --show-proposals`) and applies
//! with `git apply` when they agree; the dreamer never edits a project's files, because a
//! background rewrite of a doc the user is editing would be a change nobody asked for. A
//! newer proposal for the same doc replaces the older one, and a doc the model found
//! current has its stale proposal removed.

use std::fs;
use std::path::{Path, PathBuf};

use mc_core::ProjectId;
use similar::TextDiff;

use crate::error::{DreamerError, Result};

/// The folder under the data directory that holds every project's proposals.
pub const PROPOSALS_DIR: &str = "proposals";

/// Ends every proposal's file name.
const PATCH_SUFFIX: &str = ".patch";

/// A proposal on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocProposal {
    /// The project's folder name under [`PROPOSALS_DIR`].
    pub project_key: String,
    /// The doc it changes, relative to the project's root.
    pub doc: String,
    /// Where the patch file is.
    pub path: PathBuf,
    /// The patch, with its header.
    pub text: String,
}

/// The folder of `project`'s proposals under the data directory `data_dir`.
pub fn proposals_dir(data_dir: &Path, project: &ProjectId) -> PathBuf {
    data_dir.join(PROPOSALS_DIR).join(project_key(project))
}

/// `project`'s id as a folder name: ASCII letters, digits and `-` kept, the rest `_`.
pub fn project_key(project: &ProjectId) -> String {
    project
        .as_str()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// What writing one doc's proposal did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// The proposal is at this path.
    Proposed(PathBuf),
    /// The proposed text is the doc's own; no proposal (an older one was removed).
    Unchanged,
}

/// Writes the proposal that `doc` (whose text is `current`, `None` when the project has no
/// such file) become `proposed`, with `header` lines above the diff, into `dir`; or removes
/// an older one when the two texts do not differ. A proposal for a missing doc is a diff
/// from `/dev/null`, which `git apply` reads as creating the file.
pub fn write_proposal(
    dir: &Path,
    doc: &str,
    current: Option<&str>,
    proposed: &str,
    header: &str,
) -> Result<Written> {
    let path = dir.join(format!("{}{PATCH_SUFFIX}", doc.replace('/', "__")));
    let proposed = with_final_newline(proposed);
    let old_name = current.map_or_else(|| "/dev/null".to_owned(), |_| format!("a/{doc}"));
    let current = current.unwrap_or_default();
    if proposed == with_final_newline(current) {
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(write_error(&path, source)),
        }
        return Ok(Written::Unchanged);
    }
    let diff = TextDiff::from_lines(current, proposed.as_str())
        .unified_diff()
        .context_radius(3)
        .header(&old_name, &format!("b/{doc}"))
        .to_string();
    let mut text = String::new();
    for line in header.lines() {
        text.push_str("# ");
        text.push_str(line);
        text.push('\n');
    }
    text.push_str(&diff);
    fs::create_dir_all(dir).map_err(|source| write_error(dir, source))?;
    let partial = path.with_extension("patch.partial");
    fs::write(&partial, text).map_err(|source| write_error(&partial, source))?;
    fs::rename(&partial, &path).map_err(|source| write_error(&path, source))?;
    Ok(Written::Proposed(path))
}

/// Every proposal under the data directory `data_dir`, of `project` only when given, by
/// project then doc.
pub fn read_proposals(data_dir: &Path, project: Option<&ProjectId>) -> Result<Vec<DocProposal>> {
    let root = data_dir.join(PROPOSALS_DIR);
    let keys: Vec<String> = match project {
        Some(project) => vec![project_key(project)],
        None => match fs::read_dir(&root) {
            Ok(entries) => entries
                .flatten()
                .filter(|entry| entry.path().is_dir())
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect(),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => return Err(write_error(&root, source)),
        },
    };
    let mut proposals = Vec::new();
    for key in keys {
        let Ok(entries) = fs::read_dir(root.join(&key)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(doc) = name.strip_suffix(PATCH_SUFFIX) else {
                continue;
            };
            let path = entry.path();
            let text = fs::read_to_string(&path).map_err(|source| DreamerError::Read {
                path: path.display().to_string(),
                source,
            })?;
            proposals.push(DocProposal {
                project_key: key.clone(),
                doc: doc.replace("__", "/"),
                path,
                text,
            });
        }
    }
    proposals.sort_by(|a, b| (&a.project_key, &a.doc).cmp(&(&b.project_key, &b.doc)));
    Ok(proposals)
}

fn with_final_newline(text: &str) -> String {
    let mut text = text.trim_end().to_owned();
    text.push('\n');
    text
}

fn write_error(path: &Path, source: std::io::Error) -> DreamerError {
    DreamerError::Proposal {
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_differing_text_becomes_a_patch_and_the_same_text_removes_it() {
        let data = tempfile::tempdir().unwrap();
        let project = ProjectId::new("git:ab/cd").unwrap();
        let dir = proposals_dir(data.path(), &project);
        assert!(dir.ends_with("proposals/git_ab_cd"));
        let current = "# Architecture\n\nParsing: src/old.rs\nNetwork: src/net.rs\n";
        let proposed = "# Architecture\n\nParsing: src/parse.rs\nNetwork: src/net.rs";
        let written =
            write_proposal(&dir, "ARCHITECTURE.md", Some(current), proposed, "why\nhow").unwrap();
        let Written::Proposed(path) = written else {
            panic!("no proposal written");
        };
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "# why\n# how\n--- a/ARCHITECTURE.md\n+++ b/ARCHITECTURE.md\n@@ -1,4 +1,4 @@\n # Architecture\n \n-Parsing: src/old.rs\n+Parsing: src/parse.rs\n Network: src/net.rs\n"
        );
        let listed = read_proposals(data.path(), None).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].doc, "ARCHITECTURE.md");
        assert_eq!(listed[0].project_key, "git_ab_cd");
        let same = write_proposal(
            &dir,
            "ARCHITECTURE.md",
            Some(current),
            current.trim_end(),
            "x",
        );
        assert_eq!(same.unwrap(), Written::Unchanged);
        assert!(!path.exists());
        assert!(
            read_proposals(data.path(), Some(&project))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_missing_doc_is_proposed_as_a_diff_creating_it() {
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().join("p");
        let written = write_proposal(
            &dir,
            "ARCHITECTURE.md",
            None,
            "# A

B",
            "new",
        )
        .unwrap();
        let Written::Proposed(path) = written else {
            panic!("no proposal written");
        };
        assert_eq!(
            fs::read_to_string(path).unwrap(),
            "# new\n--- /dev/null\n+++ b/ARCHITECTURE.md\n@@ -0,0 +1,3 @@\n+# A\n+\n+B\n"
        );
        let empty = write_proposal(&dir, "STRUCTURE.md", None, "\n", "new").unwrap();
        assert_eq!(empty, Written::Unchanged, "an empty doc is no proposal");
    }
}
