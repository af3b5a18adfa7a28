//! `ctx_memory`: the agent reads and curates the project's memories.
//!
//! Every change goes through the store's memory repository with the agent as the actor, so
//! the head's delta and the memory log show it like any other change. Memories belong to the
//! project of the working directory; an id of another project is "not found", unless that
//! project shares it through a workspace: then it reads like an own memory, marked, and a
//! change is refused naming its owner (`shared_memory.rs`). A change of several memories
//! (archive, merge) runs in one transaction: all of it or none.

use mc_core::ProjectId;
use mc_core::head::MemoryCategory;
use mc_core::workspace::SharedSource;
use mc_store::{
    Added, MemoryEdit, MemorySource, MemoryStatus, NewMemory, ProjectKnowledgeWrite, StoreError,
    StoredMemory,
};
use schemars::JsonSchema;
use serde::Deserialize;

use super::shared_memory::{find_shared, read_only, shared_line, shared_lines};
use super::{ToolAnswer, ToolContext, bound_project};
use crate::team_link::write_knowledge;

pub(super) const NAME: &str = "ctx_memory";
pub(super) const DESCRIPTION: &str = "Read and curate this project's long-lived memories: facts \
that stay true across sessions (rules, architecture, constraints, config values, naming). \
write: category + content. update: ids=[id] + content and/or category. archive: ids. merge: \
ids (+ optional content for the merged wording). get: ids. list: optional category. Categories: \
PROJECT_RULES, ARCHITECTURE, CONSTRAINTS, CONFIG_VALUES, NAMING.";

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryAction {
    /// Store a new memory (category and content).
    Write,
    /// Rewrite one memory (ids = [id]; content and/or category).
    Update,
    /// Retire memories (ids).
    Archive,
    /// Fold several memories into one (ids; content for a new wording).
    Merge,
    /// Show memories by id (ids).
    Get,
    /// Show the live memories, optionally of one category.
    List,
}

/// Arguments of `ctx_memory`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryArgs {
    /// What to do.
    pub action: MemoryAction,
    /// PROJECT_RULES, ARCHITECTURE, CONSTRAINTS, CONFIG_VALUES or NAMING.
    #[serde(default)]
    pub category: Option<String>,
    /// The memory's wording: one fact, one or two sentences.
    #[serde(default)]
    pub content: Option<String>,
    /// Memory ids (update: exactly one; merge: the memories to fold together).
    #[serde(default)]
    pub ids: Option<Vec<u64>>,
}

pub(super) fn run(ctx: &ToolContext<'_>, args: &MemoryArgs) -> ToolAnswer {
    let project = match bound_project(ctx, NAME) {
        Ok(project) => project,
        Err(answer) => return answer,
    };
    let category = match args.category.as_deref().map(parse_category).transpose() {
        Ok(category) => category,
        Err(answer) => return answer,
    };
    let ids = args.ids.as_deref().unwrap_or_default();
    let content = args
        .content
        .as_deref()
        .filter(|text| !text.trim().is_empty());
    let now_ms = ctx.now_ms;
    let shared = ctx.engine.workspaces().shared_with(project);
    let act = |tx: &dyn ProjectKnowledgeWrite| {
        let change = Change {
            tx,
            project,
            shared: &shared,
            now_ms,
        };
        change.act(args.action, category, content, ids)
    };
    let result = write_knowledge(
        ctx.engine.store(),
        ctx.engine.team_store().map(AsRef::as_ref),
        act,
    );
    result.unwrap_or_else(|error| answer_for(&error))
}

/// A refusal of the memory repository is the model's to fix; anything else is the store's.
fn answer_for(error: &StoreError) -> ToolAnswer {
    match error {
        // Queued, not failed: the change lands when the team store returns.
        StoreError::QueuedForTeam { .. } => ToolAnswer::ok(error.to_string()),
        StoreError::UnknownMemory { .. }
        | StoreError::DuplicateMemory { .. }
        | StoreError::MemoryRefused { .. }
        | StoreError::EmptyMemory => ToolAnswer::error(error.to_string()),
        other => ToolAnswer::store(other),
    }
}

fn parse_category(name: &str) -> Result<MemoryCategory, ToolAnswer> {
    MemoryCategory::parse(name).ok_or_else(|| {
        let names: Vec<&str> = MemoryCategory::ALL.iter().map(|c| c.as_str()).collect();
        ToolAnswer::error(format!(
            "unknown category `{name}`; use one of {}",
            names.join(", ")
        ))
    })
}

fn line(memory: &StoredMemory) -> String {
    format!(
        "[{}] {} ({}): {}\n",
        memory.id,
        memory.record.category.as_str(),
        memory.record.status.as_str(),
        memory.record.content
    )
}

/// One change of the project's memories, in one write of the project's knowledge.
struct Change<'t> {
    tx: &'t dyn ProjectKnowledgeWrite,
    project: &'t ProjectId,
    /// The projects sharing memories with this one: readable here, never changed.
    shared: &'t [SharedSource],
    now_ms: i64,
}

type Answer = Result<ToolAnswer, StoreError>;

impl Change<'_> {
    fn act(
        &self,
        action: MemoryAction,
        category: Option<MemoryCategory>,
        content: Option<&str>,
        ids: &[u64],
    ) -> Answer {
        match action {
            MemoryAction::Write => match (category, content) {
                (Some(category), Some(content)) => self.write(category, content),
                _ => Ok(ToolAnswer::error(
                    "write needs category and content, e.g. {\"action\": \"write\", \"category\": \
                     \"CONSTRAINTS\", \"content\": \"Never call the network in tests.\"}",
                )),
            },
            MemoryAction::Update => match ids {
                [id] if category.is_some() || content.is_some() => {
                    self.update(*id, category, content)
                }
                [_] => Ok(ToolAnswer::error(
                    "update needs content or category (or both) to change",
                )),
                _ => Ok(ToolAnswer::error("update takes exactly one id: ids=[id]")),
            },
            MemoryAction::Archive if ids.is_empty() => Ok(ToolAnswer::error(
                "archive needs the ids of the memories to retire: ids=[id, ...]",
            )),
            MemoryAction::Archive => self.archive(ids),
            MemoryAction::Merge => self.merge(ids, category, content),
            MemoryAction::Get if ids.is_empty() => Ok(ToolAnswer::error(
                "get needs ids=[id, ...]; use action list to see every id",
            )),
            MemoryAction::Get => self.get(ids),
            MemoryAction::List => self.list(category),
        }
    }

    fn add(&self, category: MemoryCategory, content: &str) -> Result<Added, StoreError> {
        let memory = NewMemory {
            category,
            content,
            source: MemorySource::Agent,
            permanent: false,
        };
        self.tx.add_memory(self.project, &memory, self.now_ms)
    }

    fn write(&self, category: MemoryCategory, content: &str) -> Answer {
        Ok(ToolAnswer::ok(match self.add(category, content)? {
            Added::New(id) => format!("saved as memory {id} ({})", category.as_str()),
            Added::Merged(id) => {
                format!("memory {id} already says this; nothing new was stored")
            }
        }))
    }

    /// The refusal of `action` when one of `ids` is another project's shared memory: the
    /// whole call is refused before anything changes.
    fn refuse_shared(&self, ids: &[u64], action: &str) -> Result<Option<ToolAnswer>, StoreError> {
        for &id in ids {
            if self.tx.memory(self.project, id)?.is_none()
                && let Some(hit) = find_shared(self.tx, self.shared, id)?
            {
                return Ok(Some(read_only(&hit, action)));
            }
        }
        Ok(None)
    }

    fn update(&self, id: u64, category: Option<MemoryCategory>, content: Option<&str>) -> Answer {
        if let Some(refusal) = self.refuse_shared(&[id], "update")? {
            return Ok(refusal);
        }
        let edit = MemoryEdit { category, content };
        let memory =
            self.tx
                .edit_memory(self.project, id, edit, MemorySource::Agent, self.now_ms)?;
        Ok(ToolAnswer::ok(format!("updated {}", line(&memory))))
    }

    fn archive(&self, ids: &[u64]) -> Answer {
        if let Some(refusal) = self.refuse_shared(ids, "archive")? {
            return Ok(refusal);
        }
        for &id in ids {
            self.tx
                .archive_memory(self.project, id, MemorySource::Agent, self.now_ms)?;
        }
        Ok(ToolAnswer::ok(format!("archived memories {}", joined(ids))))
    }

    /// With `content`: a memory with that wording replaces every id. Without: the first id
    /// stays and replaces the others.
    fn merge(
        &self,
        ids: &[u64],
        category: Option<MemoryCategory>,
        content: Option<&str>,
    ) -> Answer {
        if let Some(refusal) = self.refuse_shared(ids, "merge")? {
            return Ok(refusal);
        }
        let keep = match (content, ids) {
            (Some(content), [first, ..]) => {
                let category = match category {
                    Some(category) => category,
                    None => self.require(*first)?.record.category,
                };
                self.add(category, content)?.id()
            }
            (None, [first, _, ..]) => *first,
            _ => {
                return Ok(ToolAnswer::error(
                    "merge needs at least two ids (the first is kept), or ids and content for \
                     the merged wording",
                ));
            }
        };
        for &old in ids.iter().filter(|&&id| id != keep) {
            self.tx
                .supersede_memory(self.project, old, keep, MemorySource::Agent, self.now_ms)?;
        }
        let kept = self.require(keep)?;
        Ok(ToolAnswer::ok(format!("merged into {}", line(&kept))))
    }

    fn get(&self, ids: &[u64]) -> Answer {
        let mut out = String::new();
        for &id in ids {
            if self.tx.memory(self.project, id)?.is_none()
                && let Some(hit) = find_shared(self.tx, self.shared, id)?
            {
                out.push_str(&shared_line(&hit));
                continue;
            }
            out.push_str(&line(&self.require(id)?));
        }
        Ok(ToolAnswer::ok(out))
    }

    fn list(&self, category: Option<MemoryCategory>) -> Answer {
        let live = [MemoryStatus::Active, MemoryStatus::Permanent];
        let memories: Vec<_> = self
            .tx
            .memories(self.project, &live)?
            .into_iter()
            .filter(|memory| category.is_none_or(|wanted| memory.record.category == wanted))
            .collect();
        let shared = shared_lines(self.tx, self.shared, category)?;
        if memories.is_empty() && shared.is_empty() {
            return Ok(ToolAnswer::ok("no memories yet"));
        }
        Ok(ToolAnswer::ok(
            memories.iter().map(line).collect::<String>() + &shared,
        ))
    }

    fn require(&self, id: u64) -> Result<StoredMemory, StoreError> {
        self.tx
            .memory(self.project, id)?
            .ok_or_else(|| StoreError::UnknownMemory {
                project: self.project.to_string(),
                id,
            })
    }
}

fn joined(ids: &[u64]) -> String {
    ids.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
