//! Store work for the dashboard, off the async threads.
//!
//! SQLite blocks, so every read and write runs on the blocking pool (STYLE §5): a slow page
//! never stalls a model call streaming on the same runtime. Reads take one snapshot, so the
//! figures of one page agree with each other while the proxy writes.

use std::sync::Arc;

use mc_engine::{read_knowledge, write_knowledge};
use mc_store::{ProjectKnowledge, ProjectKnowledgeWrite, ReadTx};

use super::error::DashboardError;
use crate::app::App;

/// Runs `work` in one read snapshot of the store.
pub async fn read<T: Send + 'static>(
    app: &App,
    work: impl FnOnce(&ReadTx<'_>) -> mc_store::Result<T> + Send + 'static,
) -> Result<T, DashboardError> {
    app.store.open_if_closed().await;
    let engine = Arc::clone(app.engine().map_err(DashboardError::Unavailable)?);
    tokio::task::spawn_blocking(move || engine.store().read(work))
        .await
        .map_err(|error| DashboardError::Unavailable(error.to_string()))?
        .map_err(DashboardError::from)
}

/// Runs `work` over project knowledge where it lives (the team store's cache in team mode),
/// with the team store's URL as it may be shown (`None`: the local tables).
pub async fn read_memories<T: Send + 'static>(
    app: &App,
    work: impl FnOnce(&dyn ProjectKnowledge) -> mc_store::Result<T> + Send + 'static,
) -> Result<(T, Option<String>), DashboardError> {
    app.store.open_if_closed().await;
    let engine = Arc::clone(app.engine().map_err(DashboardError::Unavailable)?);
    tokio::task::spawn_blocking(move || {
        let team = engine.team_store().map(AsRef::as_ref);
        let shown = team.map(|link| link.shown_url().to_owned());
        read_knowledge(engine.store(), team, work).map(|found| (found, shown))
    })
    .await
    .map_err(|error| DashboardError::Unavailable(error.to_string()))?
    .map_err(DashboardError::from)
}

/// Runs `work` over project knowledge where it lives: through to the team store in team
/// mode (on a blocking thread, as the agent's memory tool does), else in one write
/// transaction.
pub async fn write_memories<T: Send + 'static>(
    app: &App,
    work: impl FnOnce(&dyn ProjectKnowledgeWrite) -> mc_store::Result<T> + Send + 'static,
) -> Result<T, DashboardError> {
    app.store.open_if_closed().await;
    let engine = Arc::clone(app.engine().map_err(DashboardError::Unavailable)?);
    tokio::task::spawn_blocking(move || {
        write_knowledge(engine.store(), engine.team_store().map(AsRef::as_ref), work)
    })
    .await
    .map_err(|error| DashboardError::Unavailable(error.to_string()))?
    .map_err(DashboardError::from)
}
