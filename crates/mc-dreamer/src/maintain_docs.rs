//! The `maintain_docs` task: the project's ARCHITECTURE.md and STRUCTURE.md compared with
//! its code by the agent loop, and an update proposed as a patch under the data directory
//! ([`crate::doc_proposals`]) when the model's text differs from the file.
//!
//! The model is shown each doc that exists and the newest commits, looks at the code with
//! the loop's read-only tools, and answers `propose_doc` with a doc's full new text or
//! finishes. Only the docs it was shown can be proposed; a proposal identical to the file
//! is none (and clears an older one). Nothing is written into the project.
//!
//! A project with neither doc is left alone while it is quiet: a doc nobody asked for is
//! noise. Once its last month is busy ([`NEW_DOC_MIN_COMMITS`] commits touching
//! [`NEW_DOC_MIN_FILES`] files), the code has a shape worth describing, and the model may
//! propose a first ARCHITECTURE.md, as a patch that creates the file when the user applies
//! it; still never written into the project.

use std::collections::HashSet;
use std::fmt::Write as _;

use mc_core::dreamer::DOC_TOOL;

use crate::agent_loop::{Decision, Duty, LoopBudget, LoopStop, ProposedDoc, run_loop};
use crate::agent_tools::AgentTools;
use crate::batches::TaskContext;
use crate::doc_proposals::{Written, proposals_dir, write_proposal};
use crate::error::Result;
use crate::project_commits::{ProjectCommit, commits_since};
use crate::project_index::ProjectIndex;
use crate::report::TaskReport;

/// The docs the task maintains, at the project's root.
pub const MAINTAINED_DOCS: [&str; 2] = ["ARCHITECTURE.md", "STRUCTURE.md"];

/// Commits shown with the docs: what changed lately is where a doc goes stale.
const COMMITS_SHOWN: usize = 20;

/// The doc proposed to a project that has neither: how the code is built is what a reader
/// new to it misses first.
const NEW_DOC: &str = "ARCHITECTURE.md";

/// Commits in the last 30 days before a project with neither doc gets one proposed.
pub const NEW_DOC_MIN_COMMITS: usize = 10;

/// Distinct files those commits touched before a project with neither doc gets one
/// proposed: many commits to one file are not a structure to describe.
pub const NEW_DOC_MIN_FILES: usize = 20;

/// Opens the message of a project that has neither doc.
pub const NEW_DOC_OPENING: &str = "The project has no ARCHITECTURE.md or STRUCTURE.md yet.";

/// What the loop is told when it may start the project's first doc.
const NEW_DOC_INSTRUCTIONS: &str = "\
The project has no ARCHITECTURE.md or STRUCTURE.md, and the commits of its last month \
(shown) changed many files. Look at the project with the tools: its folders, entry points \
and the files the commits touch most. When the code has a structure a reader new to it \
should know, call `propose_doc` with path ARCHITECTURE.md, its full text and a reason: \
the components and what each does, how data flows between them, and where each lives, \
stating only what the code shows, in under 80 lines. When there is nothing worth \
describing, `finish` without proposing.";

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
    let month_ms = 30 * 86_400_000;
    let commits = commits_since(folder, (ctx.clock)().saturating_sub(month_ms));
    let starting = docs.is_empty();
    if starting && !is_busy(&commits) {
        return Ok(TaskReport {
            detail: format!(
                "the project has no ARCHITECTURE.md or STRUCTURE.md and its last month is quiet \
                 ({} commits; one is proposed from {NEW_DOC_MIN_COMMITS} commits touching \
                 {NEW_DOC_MIN_FILES} files); nothing to maintain",
                commits.len()
            ),
            ..TaskReport::default()
        });
    }
    let index = ProjectIndex::load(folder)?;
    let tools = AgentTools {
        folder,
        index: &index,
    };
    let shown: Vec<&str> = if starting {
        vec![NEW_DOC]
    } else {
        docs.iter().map(|(doc, _)| *doc).collect()
    };
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
    let lines: Vec<String> = commits
        .iter()
        .take(COMMITS_SHOWN)
        .map(commit_line)
        .collect();
    let (instructions, task) = if starting {
        (NEW_DOC_INSTRUCTIONS, new_doc_message(&commits, &lines))
    } else {
        (DOCS_INSTRUCTIONS, docs_message(&docs, &lines))
    };
    let duty = Duty {
        instructions,
        task,
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
        let current = match docs.iter().find(|(doc, _)| *doc == path) {
            Some((_, current)) => Some(current.as_str()),
            None if starting && path == NEW_DOC => None,
            None => continue,
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
    let checked = if starting {
        format!("no docs, {} commits this month", commits.len())
    } else {
        format!("{} of {} docs checked", docs.len(), MAINTAINED_DOCS.len())
    };
    report.detail = format!(
        "{checked}, the loop {}{}",
        end.stop.describe(),
        if said.is_empty() {
            "; no proposal".to_owned()
        } else {
            format!("; {}", said.join("; "))
        }
    );
    Ok(report)
}

/// Whether the month's `commits` are enough to start a project's first doc.
fn is_busy(commits: &[ProjectCommit]) -> bool {
    commits.len() >= NEW_DOC_MIN_COMMITS && touched_files(commits) >= NEW_DOC_MIN_FILES
}

/// How many distinct files `commits` touched.
fn touched_files(commits: &[ProjectCommit]) -> usize {
    commits
        .iter()
        .flat_map(|commit| commit.files.iter().map(String::as_str))
        .collect::<HashSet<&str>>()
        .len()
}

/// A commit as the model is shown it: subject and files.
fn commit_line(commit: &ProjectCommit) -> String {
    format!("{} ({})", commit.subject, commit.files.join(", "))
}

/// The message of a project with neither doc: what its month changed, then the newest
/// commits.
pub fn new_doc_message(commits: &[ProjectCommit], lines: &[String]) -> String {
    let mut out = format!(
        "{NEW_DOC_OPENING}\nIn the last 30 days: {} commits touching {} files.\n",
        commits.len(),
        touched_files(commits)
    );
    push_commits(&mut out, lines);
    out
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
    push_commits(&mut out, commits);
    out
}

/// The newest commits, a line each, under their heading.
fn push_commits(out: &mut String, commits: &[String]) {
    out.push_str("\nNewest commits (subject, files):\n");
    if commits.is_empty() {
        out.push_str("none in the last 30 days\n");
    }
    for commit in commits {
        let _ = writeln!(out, "- {commit}");
    }
}
