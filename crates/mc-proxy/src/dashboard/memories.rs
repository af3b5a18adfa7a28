//! A project's memories for the dashboard: list and search them, read their change log, and
//! add, edit or archive one as the operator.
//!
//! A change made here is an operator's change made outside any session, logged with the
//! operator as its actor: the one kind of memory change that rebuilds `m[0]` at the next
//! fold (DESIGN §5), exactly as `magic-context memory edit` does.

use std::collections::BTreeSet;

use mc_core::ProjectId;
use mc_core::head::MemoryCategory;
use mc_store::{
    MemoryEdit, MemorySource, MemoryStatus, NewMemory, ProjectKnowledge, ProjectKnowledgeWrite,
    ReadTx, StoredMemory,
};
use serde::{Deserialize, Serialize};

use super::error::DashboardError;

/// Log entries shown with the memories, newest first.
const LOG_SHOWN: usize = 200;

/// Sessions scanned for the projects the dashboard offers.
const SESSIONS_SCANNED: usize = 1_000;

/// One memory as the page and the API show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryView {
    /// The store's id.
    pub id: u64,
    /// Its category (`PROJECT_RULES`, ...).
    pub category: String,
    /// The fact.
    pub content: String,
    /// `active`, `permanent` or `archived`.
    pub status: String,
    /// Who wrote it.
    pub source: String,
    /// How many times it was stated.
    pub seen_count: u64,
    /// When it last changed, unix milliseconds.
    pub updated_ms: i64,
}

impl MemoryView {
    fn of(memory: &StoredMemory) -> Self {
        Self {
            id: memory.id,
            category: memory.record.category.as_str().to_owned(),
            content: memory.record.content.clone(),
            status: memory.record.status.as_str().to_owned(),
            source: memory.record.source.as_str().to_owned(),
            seen_count: memory.record.seen_count,
            updated_ms: memory.record.updated_ms,
        }
    }
}

/// One change in the memory log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogView {
    /// The memory changed.
    pub memory_id: u64,
    /// `added`, `changed`, `superseded`, `archived`.
    pub action: String,
    /// When, unix milliseconds.
    pub at_ms: i64,
    /// Who made it (`operator`, `agent`, `historian`, `dreamer`), when recorded.
    pub actor: Option<String>,
    /// The dreamer task behind it, if the dreamer made it.
    pub task: Option<String>,
    /// What changed.
    pub detail: Option<String>,
}

/// A project's memories and their log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectMemories {
    /// The project.
    pub project: String,
    /// Its memories matching the search, newest first.
    pub memories: Vec<MemoryView>,
    /// Its newest changes, newest first.
    pub log: Vec<LogView>,
    /// The team store these memories live in (its URL, password redacted), or `None` for
    /// this machine's own tables: the page says whose memories it edits.
    pub team_store: Option<String>,
}

/// What the memories list is asked for.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct MemoriesQuery {
    /// The project (required by the API; the page picks the first known one).
    pub project: Option<String>,
    /// Words every shown memory contains (case-insensitive).
    pub q: Option<String>,
    /// Show archived memories too.
    #[serde(default)]
    pub archived: bool,
}

/// The projects the store knows sessions or folders of, sorted.
pub fn known_projects(tx: &ReadTx<'_>) -> mc_store::Result<Vec<String>> {
    let mut projects: BTreeSet<String> = tx
        .list_sessions(SESSIONS_SCANNED)?
        .into_iter()
        .filter_map(|session| session.project.map(|project| project.as_str().to_owned()))
        .collect();
    projects.extend(
        tx.project_folders()?
            .into_keys()
            .map(|project| project.as_str().to_owned()),
    );
    Ok(projects.into_iter().collect())
}

/// The project id `raw` names, or a clear error.
pub fn project_id(raw: Option<&str>) -> Result<ProjectId, DashboardError> {
    let raw = raw
        .map(str::trim)
        .filter(|raw| !raw.is_empty())
        .ok_or_else(|| {
            DashboardError::BadRequest(
                "name the project: ?project=ID (see /api/sessions)".to_owned(),
            )
        })?;
    ProjectId::new(raw).map_err(|error| DashboardError::BadRequest(error.to_string()))
}

/// The memories of `project` matching `query`, with the project's log.
pub fn project_memories(
    tx: &dyn ProjectKnowledge,
    project: &ProjectId,
    query: &MemoriesQuery,
) -> mc_store::Result<ProjectMemories> {
    let statuses: &[MemoryStatus] = if query.archived {
        MemoryStatus::ALL
    } else {
        &[MemoryStatus::Active, MemoryStatus::Permanent]
    };
    let words: Vec<String> = query
        .q
        .as_deref()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_lowercase)
        .collect();
    let mut memories: Vec<MemoryView> = tx
        .memories(project, statuses)?
        .iter()
        .filter(|memory| {
            let text = memory.record.content.to_lowercase();
            words.iter().all(|word| text.contains(word.as_str()))
        })
        .map(MemoryView::of)
        .collect();
    memories.reverse();
    let log: Vec<LogView> = tx
        .memory_log_since(project, 0)?
        .into_iter()
        .rev()
        .take(LOG_SHOWN)
        .map(|entry| LogView {
            memory_id: entry.memory_id,
            action: entry.action.as_str().to_owned(),
            at_ms: entry.at_ms,
            actor: entry.actor.map(|actor| actor.as_str().to_owned()),
            task: entry.task,
            detail: entry.detail,
        })
        .collect();
    Ok(ProjectMemories {
        project: project.as_str().to_owned(),
        memories,
        log,
        team_store: None,
    })
}

/// A memory to add, as the API takes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddMemory {
    /// The project.
    pub project: String,
    /// Its category.
    pub category: String,
    /// The fact.
    pub content: String,
    /// Keep it for good.
    #[serde(default)]
    pub permanent: bool,
}

/// An edit, as the API takes it: what is absent stays.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditMemory {
    /// The project.
    pub project: String,
    /// The new category.
    pub category: Option<String>,
    /// The new wording.
    pub content: Option<String>,
}

/// Which memory to archive.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveMemory {
    /// The project.
    pub project: String,
}

/// The category `name` names, or an error listing the five.
pub fn category(name: &str) -> Result<MemoryCategory, DashboardError> {
    let wanted = name.trim().to_ascii_uppercase();
    MemoryCategory::ALL
        .into_iter()
        .find(|category| category.as_str() == wanted)
        .ok_or_else(|| {
            let names: Vec<&str> = MemoryCategory::ALL.iter().map(|c| c.as_str()).collect();
            DashboardError::BadRequest(format!(
                "unknown category `{name}`; use one of {}",
                names.join(", ")
            ))
        })
}

/// Adds `memory` as the operator.
pub fn add(
    tx: &dyn ProjectKnowledgeWrite,
    project: &ProjectId,
    (category, content, permanent): (MemoryCategory, &str, bool),
    now_ms: i64,
) -> mc_store::Result<Option<MemoryView>> {
    let added = tx.add_memory(
        project,
        &NewMemory {
            category,
            content,
            source: MemorySource::Operator,
            permanent,
        },
        now_ms,
    )?;
    Ok(tx.memory(project, added.id())?.as_ref().map(MemoryView::of))
}

/// Edits memory `id` as the operator.
pub fn edit(
    tx: &dyn ProjectKnowledgeWrite,
    project: &ProjectId,
    id: u64,
    (category, content): (Option<MemoryCategory>, Option<&str>),
    now_ms: i64,
) -> mc_store::Result<MemoryView> {
    let edited = tx.edit_memory(
        project,
        id,
        MemoryEdit { category, content },
        MemorySource::Operator,
        now_ms,
    )?;
    Ok(MemoryView::of(&edited))
}

/// Archives memory `id` as the operator.
pub fn archive(
    tx: &dyn ProjectKnowledgeWrite,
    project: &ProjectId,
    id: u64,
    now_ms: i64,
) -> mc_store::Result<MemoryView> {
    let archived = tx.archive_memory(project, id, MemorySource::Operator, now_ms)?;
    Ok(MemoryView::of(&archived))
}
