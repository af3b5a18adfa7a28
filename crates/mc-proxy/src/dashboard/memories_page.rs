//! The memories page: a project's memories, searchable by words, each editable and
//! archivable, a form to add one, and the project's change log.
//!
//! The forms send JSON to the API with the token header ([`super::access`]) through the
//! page's script; a change made here is the operator's edit DESIGN.md describes.

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::Html;
use maud::{Markup, html};
use mc_core::head::MemoryCategory;

use super::error::PageError;
use super::figures::age;
use super::memories::{
    MemoriesQuery, MemoryView, ProjectMemories, known_projects, project_id, project_memories,
};
use super::page_layout::{Page, Section, render};
use super::sessions_page::url_component;
use super::state::Dashboard;
use super::store_work;
use crate::clock::now_ms;

/// `GET /_magic-context/ui/memories?project=&q=&archived=`; without a project, the first
/// the store knows.
pub async fn page(
    State(dashboard): State<Arc<Dashboard>>,
    query: Result<Query<MemoriesQuery>, QueryRejection>,
) -> Result<Html<String>, PageError> {
    let Query(query) = query?;
    let token = dashboard.token().await?.as_str().to_owned();
    let projects = store_work::read(&dashboard.app, known_projects).await?;
    let chosen = query
        .project
        .clone()
        .filter(|project| !project.trim().is_empty())
        .or_else(|| projects.first().cloned());
    let shown = match chosen.as_deref().map(|raw| project_id(Some(raw))) {
        Some(Ok(project)) => {
            let asked = query.clone();
            let (mut shown, team_store) =
                store_work::read_memories(&dashboard.app, move |knowledge| {
                    project_memories(knowledge, &project, &asked)
                })
                .await?;
            shown.team_store = team_store;
            Some(shown)
        }
        Some(Err(_)) | None => None,
    };
    Ok(render(Page {
        title: "Memories",
        section: Section::Memories,
        token: &token,
        refresh_from: None,
        body: body(&projects, shown.as_ref(), &query, now_ms()),
    }))
}

/// The page's content; `now` dates the ages shown.
fn body(
    projects: &[String],
    shown: Option<&ProjectMemories>,
    query: &MemoriesQuery,
    now: i64,
) -> Markup {
    let current = shown
        .map(|shown| shown.project.as_str())
        .unwrap_or_default();
    html! {
        form.filter method="get" {
            label { "Project "
                select name="project" {
                    @for known in projects {
                        option value=(known) selected[known == current] { (known) }
                    }
                }
            }
            label { "Words " input type="search" name="q" value=(query.q.as_deref().unwrap_or_default()); }
            label { input type="checkbox" name="archived" value="true" checked[query.archived]; " archived too" }
            button type="submit" { "Show" }
        }
        @match shown {
            None => p.empty { "No project known yet: memories belong to a project, and none has a session." },
            Some(shown) => { (memories(shown, now)) }
        }
    }
}

fn memories(shown: &ProjectMemories, now: i64) -> Markup {
    let project = shown.project.as_str();
    html! {
        @if let Some(url) = &shown.team_store {
            p.meta #team-store {
                "These are the team's memories, in the team store at " code { (url) }
                ": what you change here every proxy of the team shows."
            }
        }
        h2 { "Add a memory" }
        form.change data-api="/_magic-context/api/memories" {
            input type="hidden" name="project" value=(project);
            (category_select(None))
            textarea name="content" rows="2" required placeholder="A fact the agent should carry" {}
            label { input type="checkbox" name="permanent"; " permanent" }
            button type="submit" { "Add" }
        }
        h2 { (shown.memories.len()) " memories" }
        p.meta {
            a href=(format!("/_magic-context/api/memories/export?project={}", url_component(project))) {
                "Export"
            }
            " (one JSON line per memory, as " code { "magic-context memory export" } " writes and "
            code { "memory import" } " reads)"
        }
        @for memory in &shown.memories { (memory_item(project, memory, now)) }
        h2 { "Change log" }
        @if shown.log.is_empty() {
            p.empty { "No changes yet." }
        } @else {
            table #memory-log {
                thead { tr { th { "When" } th { "Memory" } th { "Change" } th { "By" } th { "Detail" } } }
                tbody { @for entry in &shown.log {
                    tr {
                        td { (age(now, entry.at_ms)) }
                        td.num { "#" (entry.memory_id) }
                        td { (entry.action) }
                        td { (entry.actor.as_deref().unwrap_or("–"))
                             @if let Some(task) = &entry.task { " (" (task) ")" } }
                        td { (entry.detail.as_deref().unwrap_or_default()) }
                    }
                } }
            }
        }
    }
}

/// One memory, with its edit and archive forms (none for an archived one).
fn memory_item(project: &str, memory: &MemoryView, now: i64) -> Markup {
    let api = format!("/_magic-context/api/memories/{}", memory.id);
    html! {
        article.memory data-id=(memory.id) {
            p.meta {
                "#" (memory.id) " · " (memory.category) " · " (memory.status) " · by "
                (memory.source) " · seen " (memory.seen_count) "× · " (age(now, memory.updated_ms))
            }
            @if memory.status == "archived" {
                p { (memory.content) }
            } @else {
                form.change data-api=(api) {
                    input type="hidden" name="project" value=(project);
                    (category_select(Some(&memory.category)))
                    textarea name="content" rows="2" required { (memory.content) }
                    button type="submit" { "Save" }
                }
                form.change data-api=(format!("{api}/archive")) data-confirm="Archive this memory?" {
                    input type="hidden" name="project" value=(project);
                    button type="submit" { "Archive" }
                }
            }
        }
    }
}

/// The five categories, `chosen` selected.
fn category_select(chosen: Option<&str>) -> Markup {
    html! {
        select name="category" {
            @for category in MemoryCategory::ALL {
                option value=(category.as_str()) selected[Some(category.as_str()) == chosen] {
                    (category.as_str())
                }
            }
        }
    }
}

/// The page's address for `project`, for links from other pages.
pub fn memories_url(project: &str) -> String {
    format!(
        "/_magic-context/ui/memories?project={}",
        url_component(project)
    )
}
