//! The `maintain_docs` task: the project's ARCHITECTURE.md and STRUCTURE.md compared with
//! its code by the agent loop, and an update proposed as a patch under the data directory
//! ([`crate::doc_proposals`]) when the model's text differs from the file.
//!
//! The model is shown each doc that exists and the newest commits, looks at the code with
//! the loop's read-only tools, and answers `propose_doc` with a doc's full new text or
//! finishes. Only the docs it was shown can be proposed; a proposal identical to the file
//! is none (and clears an older one). Nothing is written into the project, and a project
//! with neither doc has nothing to maintain: the dreamer does not start a doc the user
//! never wrote.

use std::fmt::Write as _;

use mc_core::dreamer::DOC_TOOL;

use crate::agent_loop::{Decision, Duty, LoopBudget, LoopStop, ProposedDoc, run_loop};
use crate::agent_tools::AgentTools;
use crate::batches::TaskContext;
use crate::doc_proposals::{Written, proposals_dir, write_proposal};
use crate::error::Result;
use crate::project_commits::commits_since;
use crate::project_folder::ProjectFolder;
use crate::project_index::ProjectIndex;
use crate::report::TaskReport;

/// The docs the task maintains, at the project's root.
pub const MAINTAINED_DOCS: [&str; 2] = ["ARCHITECTURE.md", "STRUCTURE.md"];

/// Commits shown with the docs: what changed lately is where a doc goes stale.
const COMMITS_SHOWN: usize = 20;

/// Opens the docs task's message.
pub const DOCS_OPENING: &str = "Project docs to keep current, as they are now:";

/// What the loop is told its docs duty is.
const DOCS_INSTRUCTIONS: &str = "\
The message shows the project's ARCHITECTURE.md (how it is built: components, data flow, \
decisions) and/or STRUCTURE.md (where things are: folders and key files), and the newest \
commits. Check what they say against the project with the tools: files and folders they \
name still exist, components the code now has are described. When a doc is out of date, \
call `propose_doc` with its path and its full new text, keeping every line that is still \
true as written and changing only what is wrong or missing, and a reason. When the docs \
are current, `finish` without proposing. Propose only the docs shown.";

/// Runs `maintain_docs` on the context's project.
pub fn maintain_docs(ctx: &TaskContext<'_>) -> Result<TaskReport> {
    let Some(folder) = ctx.folder else {
        return Ok(TaskReport::no_folder());
    };
    let docs: Vec<(&str, String)> = MAINTAINED_DOCS
        .iter()
        .filter_map(|doc| folder.read_text(doc).ok().map(|text| (*doc, text)))
        .collect();
    if docs.is_empty() {
        return Ok(TaskReport {
            detail: "the project has no ARCHITECTURE.md or STRUCTURE.md; nothing to maintain"
                .to_owned(),
            ..TaskReport::default()
        });
    }
    let index = ProjectIndex::load(folder)?;
    let tools = AgentTools {
        folder,
        index: &index,
    };
    let shown: Vec<&str> = docs.iter().map(|(doc, _)| *doc).collect();
    let accept = |decision: Decision<'_>| match decision {
        Decision::Doc { path } if shown.contains(&path) => {
            Ok(format!("proposal for {path} recorded"))
        }
        Decision::Doc { path } => Err(format!(
            "`{path}` is not one of the docs shown; propose only: {}",
            shown.join(", ")
        )),
        Decision::Verdict(_) => Err("this task judges no memory".to_owned()),
    };
    let duty = Duty {
        instructions: DOCS_INSTRUCTIONS,
        task: docs_message(&docs, &commit_lines(ctx, folder)),
        decides_with: &[DOC_TOOL],
        accept: &accept,
    };
    let mut report = TaskReport::default();
    let mut budget = LoopBudget::new((ctx.clock)());
    let end = run_loop(ctx, &tools, &duty, &mut budget, &mut report);
    if end.stop == LoopStop::ModelFailed {
        return Ok(report);
    }
    let dir = proposals_dir(ctx.data_dir, ctx.project);
    let mut said = Vec::new();
    for ProposedDoc {
        path,
        content,
        reason,
    } in end.docs
    {
        let Some((_, current)) = docs.iter().find(|(doc, _)| *doc == path) else {
            continue;
        };
        let header = format!(
            "Proposed by magic-context's dreamer (maintain_docs) for {}\n{reason}\nApply it in that folder with: git apply <this file>",
            folder.root().join(&path).display()
        );
        match write_proposal(&dir, &path, current, &content, &header)? {
            Written::Proposed(file) => {
                report.changes += 1;
                said.push(format!("{path}: proposed at {}", file.display()));
            }
            Written::Unchanged => said.push(format!("{path}: current")),
        }
    }
    report.detail = format!(
        "{} of {} docs checked, the loop {}{}",
        docs.len(),
        MAINTAINED_DOCS.len(),
        end.stop.describe(),
        if said.is_empty() {
            "; no proposal".to_owned()
        } else {
            format!("; {}", said.join("; "))
        }
    );
    Ok(report)
}

/// The newest commits, a line each: subject and files.
fn commit_lines(ctx: &TaskContext<'_>, folder: &ProjectFolder) -> Vec<String> {
    let month_ms = 30 * 86_400_000;
    commits_since(folder, (ctx.clock)().saturating_sub(month_ms))
        .into_iter()
        .take(COMMITS_SHOWN)
        .map(|commit| format!("{} ({})", commit.subject, commit.files.join(", ")))
        .collect()
}

/// The docs task's message: each doc's text, then the commits.
pub fn docs_message(docs: &[(&str, String)], commits: &[String]) -> String {
    let mut out = String::from(DOCS_OPENING);
    out.push('\n');
    for (doc, text) in docs {
        let _ = write!(
            out,
            "\n=== {doc} ===\n{}\n=== end of {doc} ===\n",
            text.trim_end()
        );
    }
    out.push_str("\nNewest commits (subject, files):\n");
    if commits.is_empty() {
        out.push_str("none in the last 30 days\n");
    }
    for commit in commits {
        let _ = writeln!(out, "- {commit}");
    }
    out
}
