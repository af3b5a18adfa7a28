//! `magic-context memory`: the operator reads and curates a project's memories.
//!
//! The project is the one the proxy stores a session's memories under: `--project DIR` (else
//! the current directory) is identified as the proxy identifies a client's working directory,
//! so what the operator adds here is what the project's sessions will be shown. A memory of
//! another project is "not found", never changed.
//!
//! `--json` prints one object: for `list`, `{"project", "memories": [MEMORY, …]}` oldest
//! first; for `add`, `{"outcome": "added"|"merged", "memory": MEMORY}`; for `edit` and
//! `archive`, `{"memory": MEMORY}`; for `import`, `{"project", "added", "merged"}`. MEMORY is
//! `id`, `category`, `content`, `status`, `source`, `seen_count`, `superseded_by` (or null),
//! `created_ms`, `updated_ms`. `export` always prints JSON lines (see [`crate::memory_lines`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, anyhow};
use clap::{ArgGroup, Args, Subcommand};
use mc_core::ProjectId;
use mc_core::head::MemoryCategory;
use mc_store::{
    Added, LocationEnv, MemoryEdit, MemorySource, MemoryStatus, NewMemory, Platform, Store,
    StoreError, StoreOptions, StoredMemory, resolve_data_dir,
};
use serde_json::{Value, json};

use crate::clock::now_ms;
use crate::memory_lines;
use crate::memory_place::MemoryPlace;
use crate::output::{pretty, write_stdout};

/// Arguments of `memory`.
#[derive(Debug, Args)]
pub struct MemoryArgs {
    /// What to do with the project's memories.
    #[command(subcommand)]
    pub action: MemoryAction,

    /// A directory of the project [default: the current directory].
    #[arg(long, global = true, value_name = "DIR")]
    pub project: Option<PathBuf>,

    /// Print one JSON object instead of text (`export` always prints JSON lines).
    #[arg(long, global = true)]
    pub json: bool,

    /// Act on this machine's own memory table even when `team_store.url` is set: to export
    /// the memories written before the team store, and import them into it.
    #[arg(long, global = true)]
    pub local: bool,
}

/// The `memory` subcommands.
#[derive(Debug, Subcommand)]
pub enum MemoryAction {
    /// List the project's memories, oldest first.
    List {
        /// Which memories, by the status each row shows.
        #[arg(long, value_name = "STATUS", value_enum, default_value_t = StatusFilter::Live)]
        status: StatusFilter,
    },
    /// Add a memory; the same words as a live memory count it as seen again.
    Add {
        /// PROJECT_RULES, ARCHITECTURE, CONSTRAINTS, CONFIG_VALUES or NAMING.
        #[arg(long, value_name = "C")]
        category: String,
        /// Keep it for good: maintenance never archives it.
        #[arg(long)]
        permanent: bool,
        /// The fact.
        text: String,
    },
    /// Rewrite a memory's content or category.
    #[command(group(ArgGroup::new("change").required(true).multiple(true).args(["category", "content"])))]
    Edit {
        /// The memory's id, as `list` shows it.
        id: u64,
        /// Its new category.
        #[arg(long, value_name = "C")]
        category: Option<String>,
        /// Its new wording.
        #[arg(long, value_name = "TEXT")]
        content: Option<String>,
    },
    /// Archive a memory: it is no longer shown to the project's sessions.
    Archive {
        /// The memory's id, as `list` shows it.
        id: u64,
    },
    /// Write the project's live memories as JSON lines, to stdout or a file.
    Export {
        /// Write to this file instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Read memories as JSON lines (from `export`), from a file or stdin; a memory already
    /// present is merged, so importing twice changes nothing.
    Import {
        /// The file to read [default: stdin].
        file: Option<PathBuf>,
    },
}

/// The memories `list --status` selects. Rows show each memory's own status (`active`,
/// `permanent`, `archived`); `live` is the two a session's head shows, so the default list
/// is what the agent sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StatusFilter {
    /// Active and permanent: the memories the sessions' heads show.
    Live,
    /// Active only: shown, until superseded or archived.
    Active,
    /// Permanent only: shown first.
    Permanent,
    /// Archived only: kept for the record, no longer shown.
    Archived,
    /// Every memory.
    All,
}

impl StatusFilter {
    /// The stored statuses this filter selects.
    fn statuses(self) -> &'static [MemoryStatus] {
        match self {
            Self::Live => &[MemoryStatus::Active, MemoryStatus::Permanent],
            Self::Active => &[MemoryStatus::Active],
            Self::Permanent => &[MemoryStatus::Permanent],
            Self::Archived => &[MemoryStatus::Archived],
            Self::All => MemoryStatus::ALL,
        }
    }

    /// How an empty list names what it looked for.
    fn described(self) -> &'static str {
        match self {
            Self::Live => "live memories (active or permanent)",
            Self::Active => "active memories",
            Self::Permanent => "permanent memories",
            Self::Archived => "archived memories",
            Self::All => "memories",
        }
    }
}

/// Opens the store, identifies the project and runs the action.
pub fn run(args: &MemoryArgs) -> anyhow::Result<ExitCode> {
    let directory = match &args.project {
        Some(directory) => directory.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let project = project_of(&directory)?;
    // Named in messages, as the user knows it: the folder, not the project's id.
    let directory = std::fs::canonicalize(&directory).unwrap_or(directory);
    let location = resolve_data_dir(&LocationEnv::from_process(), Platform::current())
        .context("cannot find the data directory")?;
    let store = Store::open_location(&location, StoreOptions::default())
        .with_context(|| format!("cannot open the store {}", location.db_path().display()))?;
    let now_ms = now_ms()?;
    let place = if args.local {
        MemoryPlace::local(&store)
    } else {
        MemoryPlace::open(&store, &directory, &project, now_ms)?
    };
    let text = match act(args, &place, (&project, &directory), now_ms) {
        Ok(text) => text,
        Err(error) => match error
            .downcast_ref::<StoreError>()
            .and_then(|e| place.queued(e))
        {
            Some(queued) => queued,
            None => return Err(error),
        },
    };
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs the action on the memories of `project` where `place` holds them; the text to print.
fn act(
    args: &MemoryArgs,
    place: &MemoryPlace<'_>,
    (project, directory): (&ProjectId, &Path),
    now_ms: i64,
) -> anyhow::Result<String> {
    let note = place.note();
    Ok(match &args.action {
        MemoryAction::List { status } => list(place, (project, directory), *status, args.json)?,
        MemoryAction::Add {
            category,
            permanent,
            text,
        } => add(
            place,
            project,
            (category, *permanent, text),
            now_ms,
            args.json,
        )?,
        MemoryAction::Edit {
            id,
            category,
            content,
        } => {
            let edit = MemoryEdit {
                category: category.as_deref().map(parse_category).transpose()?,
                content: content.as_deref(),
            };
            let memory = place
                .write(|knowledge| {
                    knowledge.edit_memory(project, *id, edit, MemorySource::Operator, now_ms)
                })
                .with_context(|| {
                    format!(
                        "cannot edit memory {id} of the project at {}",
                        directory.display()
                    )
                })?;
            one(place, &memory, "edited", args.json)?
        }
        MemoryAction::Archive { id } => {
            let memory = place
                .write(|knowledge| {
                    knowledge.archive_memory(project, *id, MemorySource::Operator, now_ms)
                })
                .with_context(|| {
                    format!(
                        "cannot archive memory {id} of the project at {}",
                        directory.display()
                    )
                })?;
            one(place, &memory, "archived", args.json)?
        }
        MemoryAction::Export { out } => {
            let lines = memory_lines::export(place, project)?;
            match out {
                Some(path) => {
                    std::fs::write(path, &lines)
                        .with_context(|| format!("cannot write {}", path.display()))?;
                    // stdout is free: say whose memories the file holds.
                    note
                }
                // stdout is the JSON lines; the note goes to stderr.
                None => {
                    if place.is_team() {
                        eprint!("{note}");
                    }
                    lines
                }
            }
        }
        MemoryAction::Import { file } => {
            let imported = memory_lines::import(place, project, file.as_deref(), now_ms)?;
            if args.json {
                pretty(&place.json(json!({
                    "project": project.as_str(),
                    "added": imported.added,
                    "merged": imported.merged,
                    "queued": imported.queued,
                    "skipped_archived": imported.skipped_archived,
                })))?
            } else {
                format!("{}{note}", imported.describe())
            }
        }
    })
}

/// The project `directory` belongs to, identified as the proxy identifies it.
pub fn project_of(directory: &Path) -> anyhow::Result<ProjectId> {
    mc_proxy::identify_project(directory).ok_or_else(|| {
        anyhow!(
            "cannot identify the project of {}: it does not exist or cannot be read; pass \
             --project with a directory of the project",
            directory.display()
        )
    })
}

/// A category by name, in any case, with `-` for `_`.
pub fn parse_category(name: &str) -> anyhow::Result<MemoryCategory> {
    let wanted = name.trim().to_uppercase().replace('-', "_");
    MemoryCategory::ALL
        .into_iter()
        .find(|category| category.as_str() == wanted)
        .ok_or_else(|| {
            let names: Vec<&str> = MemoryCategory::ALL.iter().map(|c| c.as_str()).collect();
            anyhow!("unknown category `{name}`; use one of {}", names.join(", "))
        })
}

/// The memories of `project` (found from `directory`) that `filter` selects, as a table.
fn list(
    place: &MemoryPlace<'_>,
    (project, directory): (&ProjectId, &Path),
    filter: StatusFilter,
    as_json: bool,
) -> anyhow::Result<String> {
    let wanted = filter.statuses();
    let memories = place
        .read(|knowledge| knowledge.memories(project, wanted))
        .context("cannot read the project's memories")?;
    if as_json {
        let rows: Vec<Value> = memories.iter().map(memory_json).collect();
        return pretty(&place.json(json!({"project": project.as_str(), "memories": rows})));
    }
    if memories.is_empty() {
        return Ok(format!(
            "no {} for the project at {}; add one with `magic-context memory add --category C \
             \"text\"`\n{}",
            filter.described(),
            directory.display(),
            place.note()
        ));
    }
    let mut text = place.note();
    text.push_str(&format!(
        "{:>5}  {:<13}  {:<9}  {:<9}  {:>4}  CONTENT\n",
        "ID", "CATEGORY", "STATUS", "SOURCE", "SEEN"
    ));
    for memory in &memories {
        let record = &memory.record;
        let content = record.content.replace('\n', " ");
        text.push_str(&format!(
            "{:>5}  {:<13}  {:<9}  {:<9}  {:>4}  {content}",
            memory.id,
            record.category.as_str(),
            record.status.as_str(),
            record.source.as_str(),
            record.seen_count,
        ));
        if let Some(by) = memory.superseded_by {
            text.push_str(&format!(" (superseded by {by})"));
        }
        text.push('\n');
    }
    Ok(text)
}

fn add(
    place: &MemoryPlace<'_>,
    project: &ProjectId,
    (category, permanent, text): (&str, bool, &str),
    now_ms: i64,
    as_json: bool,
) -> anyhow::Result<String> {
    let memory = NewMemory {
        category: parse_category(category)?,
        content: text,
        source: MemorySource::Operator,
        permanent,
    };
    let (added, stored) = place
        .write(|knowledge| {
            let added = knowledge.add_memory(project, &memory, now_ms)?;
            Ok((added, knowledge.memory(project, added.id())?))
        })
        .context("cannot add the memory")?;
    let stored = stored.ok_or_else(|| anyhow!("memory {} vanished after adding", added.id()))?;
    let outcome = match added {
        Added::New(_) => "added",
        Added::Merged(_) => "merged",
    };
    if as_json {
        return pretty(&place.json(json!({"outcome": outcome, "memory": memory_json(&stored)})));
    }
    let done = match added {
        Added::New(id) => format!("added memory {id} ({})\n", stored.record.category.as_str()),
        Added::Merged(id) => format!(
            "memory {id} already says this; counted it as seen again ({} times)\n",
            stored.record.seen_count
        ),
    };
    Ok(done + &place.note())
}

fn one(
    place: &MemoryPlace<'_>,
    memory: &StoredMemory,
    done: &str,
    as_json: bool,
) -> anyhow::Result<String> {
    if as_json {
        return pretty(&place.json(json!({"memory": memory_json(memory)})));
    }
    Ok(format!(
        "{done} memory {} ({}, {}): {}\n{}",
        memory.id,
        memory.record.category.as_str(),
        memory.record.status.as_str(),
        memory.record.content,
        place.note()
    ))
}

fn memory_json(memory: &StoredMemory) -> Value {
    let record = &memory.record;
    json!({
        "id": memory.id,
        "category": record.category.as_str(),
        "content": record.content,
        "status": record.status.as_str(),
        "source": record.source.as_str(),
        "seen_count": record.seen_count,
        "superseded_by": memory.superseded_by,
        "created_ms": record.created_ms,
        "updated_ms": record.updated_ms,
    })
}
