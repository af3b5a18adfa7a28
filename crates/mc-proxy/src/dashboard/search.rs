//! The dashboard's search: one box over a project's memories, notes, earlier messages of
//! every session, history summaries and commits, through the same search `ctx_search` and
//! `magic-context search` use.
//!
//! The dashboard is the operator's, as the command line is: with no project chosen it
//! searches every project. Like the proxy's own `ctx_search`, it ranks by full text alone.

use std::sync::Arc;

use mc_core::search::FusionWeights;
use mc_engine::search::{MAX_LIMIT, SearchError, SearchHit, SearchRequest, search};
use mc_store::SearchScope;
use serde::{Deserialize, Serialize};

use super::error::DashboardError;
use super::memories::project_id;
use crate::app::App;

/// Results when the request does not say.
const DEFAULT_LIMIT: usize = 20;

/// `?q=&project=&limit=`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SearchQuery {
    /// What to look for.
    pub q: Option<String>,
    /// The project to search; empty or absent searches every project.
    pub project: Option<String>,
    /// How many results, 1 to [`MAX_LIMIT`].
    pub limit: Option<usize>,
}

/// A search and what it found.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResults {
    /// What was looked for.
    pub query: String,
    /// The project searched; `None` for every project.
    pub project: Option<String>,
    /// Best first.
    pub results: Vec<SearchHit>,
}

/// Runs `asked` against the store (on the blocking pool: search reads and indexes), or
/// says what is wrong with it.
pub async fn run(app: &App, asked: &SearchQuery) -> Result<SearchResults, DashboardError> {
    let query = asked.q.as_deref().unwrap_or_default().trim().to_owned();
    let project = asked
        .project
        .as_deref()
        .filter(|project| !project.trim().is_empty())
        .map(|project| project_id(Some(project)))
        .transpose()?;
    let limit = asked.limit.unwrap_or(DEFAULT_LIMIT);
    app.store.open_if_closed().await;
    let engine = Arc::clone(app.engine().map_err(DashboardError::Unavailable)?);
    let request = SearchRequest {
        query: query.clone(),
        scope: SearchScope {
            project: project.clone(),
            ..SearchScope::default()
        },
        viewer: None,
        limit,
        shared: Vec::new(),
        knowledge: engine.knowledge_source(),
    };
    let found = tokio::task::spawn_blocking(move || {
        search(engine.store(), &request, None, &FusionWeights::default())
    })
    .await
    .map_err(|error| DashboardError::Unavailable(error.to_string()))?;
    let results = found.map_err(|error| match error {
        SearchError::Store(error) => DashboardError::Unavailable(error.to_string()),
        SearchError::Limit(_) => {
            DashboardError::BadRequest(format!("limit must be between 1 and {MAX_LIMIT}"))
        }
        other => DashboardError::BadRequest(other.to_string()),
    })?;
    Ok(SearchResults {
        query,
        project: project.map(|project| project.as_str().to_owned()),
        results,
    })
}
