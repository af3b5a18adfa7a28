//! Wiring a process to its team store (`team_store.url`): one link per process, shared by
//! every engine the process opens, and the background loop that keeps its cache in step.

use std::sync::Arc;

use mc_core::config::Config;
use mc_engine::TeamLink;
use mc_store::{LocationEnv, Platform, Store, StoreOptions, resolve_data_dir};
use mc_team_store::{SYNC_EVERY, TeamStore, TeamSync, keep_in_step};
use tokio::runtime::Handle;

use crate::clock::now_ms;

/// The link to the configured team store, or `None` when none is configured or it cannot be
/// set up (logged: the proxy then keeps project knowledge locally, as without one).
pub fn team_link(config: &Config, runtime: &Handle) -> Option<Arc<TeamLink>> {
    let url = config.team_store.url.clone()?;
    let shown = url.redacted().to_owned();
    let team = match TeamStore::new(url) {
        Ok(team) => team,
        Err(error) => {
            tracing::error!(%error, "team_store.url cannot be used; project knowledge stays local");
            return None;
        }
    };
    // The link's own handle on the store file: its writes (queue, cache) never wait on an
    // engine's transaction.
    let store = resolve_data_dir(&LocationEnv::from_process(), Platform::current())
        .map_err(|error| error.to_string())
        .and_then(|location| {
            Store::open_location(&location, StoreOptions::default())
                .map_err(|error| error.to_string())
        });
    match store {
        Ok(store) => {
            tracing::info!(url = %shown, "project knowledge lives in the team store");
            Some(TeamLink::new(
                TeamSync::new(Arc::new(store), team),
                runtime.clone(),
            ))
        }
        Err(error) => {
            tracing::error!(%error, "the store cannot be opened for the team store's cache");
            None
        }
    }
}

/// Starts the loop that replays queued writes and refreshes the cache, on the current
/// runtime; it stops with the runtime.
pub fn start_team_sync(link: &TeamLink) {
    let sync = link.sync().clone();
    tokio::spawn(keep_in_step(sync, SYNC_EVERY, || {
        now_ms().unwrap_or_default()
    }));
}
