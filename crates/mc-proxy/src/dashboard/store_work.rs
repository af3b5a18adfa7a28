//! Store work for the dashboard, off the async threads.
//!
//! SQLite blocks, so every read and write runs on the blocking pool (STYLE §5): a slow page
//! never stalls a model call streaming on the same runtime. Reads take one snapshot, so the
//! figures of one page agree with each other while the proxy writes.

use std::sync::Arc;

use mc_store::{ReadTx, WriteTx};

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

/// Runs `work` in one write transaction of the store.
pub async fn write<T: Send + 'static>(
    app: &App,
    work: impl FnOnce(&WriteTx<'_>) -> mc_store::Result<T> + Send + 'static,
) -> Result<T, DashboardError> {
    app.store.open_if_closed().await;
    let engine = Arc::clone(app.engine().map_err(DashboardError::Unavailable)?);
    tokio::task::spawn_blocking(move || engine.store().write(work))
        .await
        .map_err(|error| DashboardError::Unavailable(error.to_string()))?
        .map_err(DashboardError::from)
}
