//! `GET /_magic-context/health`: who is listening here.
//!
//! Every other unknown path is forwarded to the provider, so without this route a tool that
//! finds a port open (`magic-context run`, `doctor`) could not tell our proxy from any other
//! server. The answer names the service and says whether managed calls can be served, so a
//! caller never reuses a proxy whose store is down without knowing it. It carries no
//! session data and no configuration, since anything on the machine may ask.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::app::App;

/// The path of the health route; the `_magic-context` prefix is one no provider uses.
pub const HEALTH_PATH: &str = "/_magic-context/health";

/// The value of `service` in the answer, which callers check before trusting the port.
pub const SERVICE_NAME: &str = "magic-context";

/// Answers with the service name, the version, and whether the store is open (trying to
/// open it first when it is not, as a managed call would).
pub async fn health(State(app): State<Arc<App>>) -> Json<Value> {
    app.store.open_if_closed().await;
    Json(json!({
        "service": SERVICE_NAME,
        "version": env!("CARGO_PKG_VERSION"),
        "store": if app.store.is_open() { "ok" } else { "unavailable" },
    }))
}
