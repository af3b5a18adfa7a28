//! The JSON API under `/_magic-context/api/`: what the pages show, for scripts and for the
//! pages' own live refresh. Reads answer `GET`; changes are `POST`s with a JSON body and the
//! token header ([`super::access`]).
//!
//! - `GET sessions?project=&sort=&limit=`: `{"sessions": [SUMMARY, …]}`
//!   ([`super::session_list::SessionSummary`]);
//! - `GET sessions/{id}`: [`super::session_detail::SessionDetail`];
//! - `GET sessions/{id}/messages?around=N`: [`super::session_detail::LogWindow`];
//! - `GET runs`: [`super::runs::Runs`], the historian's and the dreamer's newest runs;
//! - `GET config?project=`: [`super::config::ConfigView`], the effective settings with
//!   their sources, what was ignored, and the files' text;
//! - `POST config` `{"layer": "user"|"project", "project"?, "text"}`: the file replaced by
//!   `text` once it loads with no problem of its own (else a 400 saying what), then the view;
//! - `GET search?q=&project=&limit=`: [`super::search::SearchResults`], one ranking over
//!   memories, notes, messages, compartments and commits (every project without `project`);
//! - `GET memories?project=&q=&archived=`: [`super::memories::ProjectMemories`];
//! - `POST memories` `{"project", "category", "content", "permanent"}`: the memory added;
//! - `POST memories/{id}` `{"project", "category"?, "content"?}`: the memory edited;
//! - `POST memories/{id}/archive` `{"project"}`: the memory archived.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use mc_core::SessionId;
use mc_store::MemoryStatus;
use serde::Deserialize;
use serde_json::{Value, json};

use super::config::{ConfigQuery, ConfigView, SaveConfig};
use super::config_sources;
use super::error::DashboardError;
use super::memories::{self, AddMemory, ArchiveMemory, EditMemory, MemoriesQuery, MemoryView};
use super::runs::{self, Runs};
use super::search::{self, SearchQuery, SearchResults};
use super::session_detail::{self, LogWindow, SessionDetail};
use super::session_list::{self, ListQuery};
use super::state::Dashboard;
use super::store_work;
use crate::clock::now_ms;

/// `GET /api/sessions`.
pub async fn sessions(
    State(dashboard): State<Arc<Dashboard>>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Value>, DashboardError> {
    let Query(query) = query?;
    let rows = store_work::read(&dashboard.app, move |tx| {
        session_list::list_sessions(tx, &query)
    })
    .await?;
    Ok(Json(json!({"sessions": rows})))
}

/// `GET /api/config`.
pub async fn config(
    State(dashboard): State<Arc<Dashboard>>,
    query: Result<Query<ConfigQuery>, QueryRejection>,
) -> Result<Json<ConfigView>, DashboardError> {
    let Query(query) = query?;
    Ok(Json(
        config_sources::read_view(&dashboard.app, &query).await?,
    ))
}

/// `POST /api/config`.
pub async fn save_config(
    State(dashboard): State<Arc<Dashboard>>,
    change: Result<Json<SaveConfig>, JsonRejection>,
) -> Result<Json<ConfigView>, DashboardError> {
    let Json(change) = change?;
    Ok(Json(
        config_sources::save_change(&dashboard.app, change).await?,
    ))
}

/// `GET /api/search`.
pub async fn search(
    State(dashboard): State<Arc<Dashboard>>,
    query: Result<Query<SearchQuery>, QueryRejection>,
) -> Result<Json<SearchResults>, DashboardError> {
    let Query(query) = query?;
    Ok(Json(search::run(&dashboard.app, &query).await?))
}

/// `GET /api/runs`.
pub async fn runs(State(dashboard): State<Arc<Dashboard>>) -> Result<Json<Runs>, DashboardError> {
    Ok(Json(
        store_work::read(&dashboard.app, runs::recent_runs).await?,
    ))
}

/// `GET /api/sessions/{id}`.
pub async fn session(
    State(dashboard): State<Arc<Dashboard>>,
    Path(id): Path<String>,
) -> Result<Json<SessionDetail>, DashboardError> {
    Ok(Json(read_session(&dashboard, &id).await?))
}

/// The session `id` in depth, or why not.
pub async fn read_session(
    dashboard: &Dashboard,
    id: &str,
) -> Result<SessionDetail, DashboardError> {
    let session = session_id(id)?;
    let engine = Arc::clone(
        dashboard
            .app
            .engine()
            .map_err(DashboardError::Unavailable)?,
    );
    store_work::read(&dashboard.app, move |tx| {
        session_detail::session_detail(tx, engine.config(), &session)
    })
    .await?
    .ok_or_else(|| DashboardError::NotFound(format!("no session `{id}` in the store")))
}

/// Where the raw log is opened.
#[derive(Debug, Deserialize)]
pub struct Around {
    /// The ordinal at the centre [default: 0].
    #[serde(default)]
    pub around: u64,
}

/// `GET /api/sessions/{id}/messages?around=N`.
pub async fn messages(
    State(dashboard): State<Arc<Dashboard>>,
    Path(id): Path<String>,
    around: Result<Query<Around>, QueryRejection>,
) -> Result<Json<LogWindow>, DashboardError> {
    let Query(around) = around?;
    Ok(Json(read_log(&dashboard, &id, around.around).await?))
}

/// The raw log of session `id` around `ordinal`.
pub async fn read_log(
    dashboard: &Dashboard,
    id: &str,
    ordinal: u64,
) -> Result<LogWindow, DashboardError> {
    let session = session_id(id)?;
    store_work::read(&dashboard.app, move |tx| {
        session_detail::log_window(tx, &session, ordinal)
    })
    .await
}

fn session_id(raw: &str) -> Result<SessionId, DashboardError> {
    SessionId::new(raw).map_err(|error| DashboardError::BadRequest(error.to_string()))
}

/// `GET /api/memories?project=`.
pub async fn memories(
    State(dashboard): State<Arc<Dashboard>>,
    query: Result<Query<MemoriesQuery>, QueryRejection>,
) -> Result<Json<memories::ProjectMemories>, DashboardError> {
    let Query(query) = query?;
    let project = memories::project_id(query.project.as_deref())?;
    let (mut found, team_store) = store_work::read_memories(&dashboard.app, move |knowledge| {
        memories::project_memories(knowledge, &project, &query)
    })
    .await?;
    found.team_store = team_store;
    Ok(Json(found))
}

/// `GET /api/memories/export?project=`: the project's live memories as `memory export`
/// writes them (one JSON line each, oldest first), as a file to save; `memory import` reads
/// it back.
pub async fn export_memories(
    State(dashboard): State<Arc<Dashboard>>,
    query: Result<Query<MemoriesQuery>, QueryRejection>,
) -> Result<Response, DashboardError> {
    let Query(query) = query?;
    let project = memories::project_id(query.project.as_deref())?;
    let name = format!("memories-{}.jsonl", project.as_str());
    let (lines, _team) = store_work::read_memories(&dashboard.app, move |knowledge| {
        let live =
            knowledge.memories(&project, &[MemoryStatus::Active, MemoryStatus::Permanent])?;
        Ok(live
            .iter()
            .map(|memory| memory.record.export_line() + "\n")
            .collect::<String>())
    })
    .await?;
    let disposition = format!("attachment; filename=\"{}\"", name.replace('"', "_"));
    Ok((
        [
            (
                header::CONTENT_TYPE,
                "application/jsonl; charset=utf-8".to_owned(),
            ),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        lines,
    )
        .into_response())
}

/// `POST /api/memories`.
pub async fn add_memory(
    State(dashboard): State<Arc<Dashboard>>,
    body: Result<Json<AddMemory>, JsonRejection>,
) -> Result<Json<MemoryView>, DashboardError> {
    let Json(add) = body?;
    let project = memories::project_id(Some(&add.project))?;
    let category = memories::category(&add.category)?;
    let now = now_ms();
    store_work::write_memories(&dashboard.app, move |knowledge| {
        memories::add(
            knowledge,
            &project,
            (category, &add.content, add.permanent),
            now,
        )
    })
    .await?
    .map(Json)
    .ok_or_else(|| DashboardError::Unavailable("the memory vanished after adding".to_owned()))
}

/// `POST /api/memories/{id}`.
pub async fn edit_memory(
    State(dashboard): State<Arc<Dashboard>>,
    Path(id): Path<u64>,
    body: Result<Json<EditMemory>, JsonRejection>,
) -> Result<Json<MemoryView>, DashboardError> {
    let Json(edit) = body?;
    let project = memories::project_id(Some(&edit.project))?;
    let category = edit
        .category
        .as_deref()
        .map(memories::category)
        .transpose()?;
    if category.is_none() && edit.content.is_none() {
        return Err(DashboardError::BadRequest(
            "say what to change: content, category or both".to_owned(),
        ));
    }
    let now = now_ms();
    let edited = store_work::write_memories(&dashboard.app, move |knowledge| {
        memories::edit(
            knowledge,
            &project,
            id,
            (category, edit.content.as_deref()),
            now,
        )
    })
    .await?;
    Ok(Json(edited))
}

/// `POST /api/memories/{id}/archive`.
pub async fn archive_memory(
    State(dashboard): State<Arc<Dashboard>>,
    Path(id): Path<u64>,
    body: Result<Json<ArchiveMemory>, JsonRejection>,
) -> Result<Json<MemoryView>, DashboardError> {
    let Json(archive) = body?;
    let project = memories::project_id(Some(&archive.project))?;
    let now = now_ms();
    let archived = store_work::write_memories(&dashboard.app, move |knowledge| {
        memories::archive(knowledge, &project, id, now)
    })
    .await?;
    Ok(Json(archived))
}
