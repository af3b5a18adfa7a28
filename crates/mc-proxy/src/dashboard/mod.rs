//! The dashboard: every session's context, cache and memory, in the browser, served by the
//! proxy the user already runs.
//!
//! Pages under [`UI_PREFIX`] are HTML rendered on the server (maud), their charts SVG drawn
//! on the server, with one small hand-written script for live refresh and edits; the JSON
//! API under [`API_PREFIX`] answers the same questions for scripts. Nothing is built or
//! fetched at build or run time.
//!
//! Every route is behind [`access::guard`]: loopback connections only, addressed to a
//! loopback `Host`, with the access token. Reads go through the store's read snapshots and
//! writes through its transactions, both off the async threads ([`store_work`]).

mod access;
pub mod access_token;
mod api;
mod assets;
mod composition;
mod config;
mod config_page;
mod config_sources;
mod cost;
mod error;
mod figures;
mod host_compaction;
mod memories;
mod memories_page;
mod page_layout;
mod runs;
mod runs_page;
mod search;
mod search_page;
mod session_detail;
mod session_list;
mod session_page;
mod sessions_page;
mod state;
mod store_work;
mod timeline_svg;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::response::Redirect;
use axum::routing::{any, get, post};

use crate::app::App;
pub use access::{LOGIN_PATH, TOKEN_HEADER};
use access_token::AccessToken;
use error::DashboardError;
use state::{Dashboard, UI_HOME, UI_PREFIX};

/// The URL that logs a browser in to the dashboard of the proxy listening at `addr` (a
/// loopback address: the dashboard answers no other).
pub fn login_url(addr: SocketAddr, token: &AccessToken) -> String {
    format!("http://{addr}{LOGIN_PATH}?token={}", token.as_str())
}

/// The dashboard's routes, to be merged into the proxy's router.
pub fn routes<S>(app: Arc<App>) -> Router<S> {
    let dashboard = Arc::new(Dashboard::new(app));
    Router::new()
        .route(UI_PREFIX, get(|| async { Redirect::to(UI_HOME) }))
        .route(UI_HOME, get(sessions_page::page))
        .route(LOGIN_PATH, get(access::login))
        .route("/_magic-context/ui/sessions/{id}", get(session_page::page))
        .route("/_magic-context/ui/memories", get(memories_page::page))
        .route("/_magic-context/ui/runs", get(runs_page::page))
        .route("/_magic-context/ui/search", get(search_page::page))
        .route("/_magic-context/ui/config", get(config_page::page))
        .route("/_magic-context/ui/assets/{name}", get(assets::asset))
        .route("/_magic-context/api/sessions", get(api::sessions))
        .route("/_magic-context/api/runs", get(api::runs))
        .route("/_magic-context/api/search", get(api::search))
        .route(
            "/_magic-context/api/config",
            get(api::config).post(api::save_config),
        )
        .route("/_magic-context/api/sessions/{id}", get(api::session))
        .route(
            "/_magic-context/api/sessions/{id}/messages",
            get(api::messages),
        )
        .route(
            "/_magic-context/api/memories",
            get(api::memories).post(api::add_memory),
        )
        .route(
            "/_magic-context/api/memories/export",
            get(api::export_memories),
        )
        .route("/_magic-context/api/memories/{id}", post(api::edit_memory))
        .route(
            "/_magic-context/api/memories/{id}/archive",
            post(api::archive_memory),
        )
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&dashboard),
            access::guard,
        ))
        // Any other path under the prefix is ours too: forwarded, it would carry the
        // dashboard's cookie to the provider.
        .route("/_magic-context", any(unknown_path))
        .route("/_magic-context/", any(unknown_path))
        .route("/_magic-context/{*rest}", any(unknown_path))
        .with_state(dashboard)
}

/// The answer to a path under `/_magic-context/` that names nothing.
async fn unknown_path() -> DashboardError {
    DashboardError::NotFound(
        "no such path under /_magic-context/; the dashboard is at /_magic-context/ui/".to_owned(),
    )
}
