//! The proxy's routes, over its shared state ([`App`]).

use std::sync::Arc;

use axum::Router;
use axum::routing::{any, get, post};

use crate::app::App;
use crate::health::{self, HEALTH_PATH};
use crate::{browser_guard, dashboard, forward, managed};

/// The proxy's routes: the three managed model-call routes, our own health route, and
/// verbatim forwarding for everything else, other methods on the managed paths included (a `405` from the proxy
/// would hide what the upstream says, e.g. to a CORS preflight). Every route is behind
/// [`browser_guard`]: what a web page sends is refused before it is read. The dashboard's
/// routes ([`dashboard::routes`]) add their own, stricter guard behind it.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route(
            "/v1/messages",
            post(managed::anthropic_messages).fallback(forward::forward),
        )
        .route(
            "/v1/chat/completions",
            post(managed::openai_chat).fallback(forward::forward),
        )
        .route(
            "/v1/responses",
            post(managed::openai_responses).fallback(forward::forward),
        )
        .route(HEALTH_PATH, get(health::health))
        .merge(dashboard::routes(Arc::clone(&app)))
        .fallback(any(forward::forward))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&app),
            browser_guard::guard,
        ))
        .with_state(app)
}
