//! The paths the simulator answers, and the small endpoints that belong to no wire format.

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::json;

use super::anthropic::{self, MAX_BODY_BYTES, error_body};
use super::body;
use super::openai;
use super::responses;
use super::state::App;

/// Every route. Query strings (Claude Code's `?beta=true`) are accepted and ignored.
pub(crate) fn router(app: App) -> Router {
    Router::new()
        .route("/v1/messages", post(anthropic::messages))
        .route("/v1/messages/count_tokens", post(anthropic::count_tokens))
        .route("/v1/chat/completions", post(openai::chat_completions))
        .route("/v1/responses", post(responses::responses))
        .route("/v1/models", get(models))
        .route("/_sim/ledger", get(ledger))
        .fallback(not_found)
        // Above the codecs' own limit, so an oversized body gets the provider's 413 body
        // from the codec rather than axum's plain-text one.
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES + 1024 * 1024))
        .with_state(app)
}

/// `GET /_sim/ledger`: one row per call, in order, as JSON.
async fn ledger(State(app): State<App>) -> Response {
    // Through the blocking pool like every call, so waiting for the lock never stalls the
    // runtime while a large request is being counted.
    app.run(
        |state, _now_ms| match serde_json::to_vec(state.provider.ledger().rows()) {
            Ok(bytes) => body::json(200, bytes),
            Err(error) => anthropic::api_error(&format!("cannot serialise the ledger: {error}")),
        },
    )
    .await
    .unwrap_or_else(|error| anthropic::api_error(&format!("the simulator failed: {error}")))
}

/// The models a client may pick, shown to both wire formats at once: Anthropic reads
/// `type`/`display_name`/`created_at`/`has_more`, OpenAI reads `object`/`created`/`owned_by`.
const MODELS: [(&str, &str); 4] = [
    ("claude-sonnet-4-5", "Claude Sonnet 4.5"),
    ("claude-opus-4-5", "Claude Opus 4.5"),
    ("claude-haiku-4-5", "Claude Haiku 4.5"),
    ("gpt-4o", "GPT-4o"),
];

/// `GET /v1/models`.
async fn models(State(app): State<App>) -> Response {
    let created_s = app.now_ms() / 1000;
    let data: Vec<_> = MODELS
        .iter()
        .map(|(id, display_name)| {
            json!({
                "type": "model",
                "id": id,
                "display_name": display_name,
                "created_at": "2025-09-29T00:00:00Z",
                "object": "model",
                "created": created_s,
                "owned_by": "mc-sim",
            })
        })
        .collect();
    let first = MODELS.first().map(|(id, _)| *id);
    let last = MODELS.last().map(|(id, _)| *id);
    body::json_value(
        200,
        &json!({
            "object": "list",
            "data": data,
            "has_more": false,
            "first_id": first,
            "last_id": last,
        }),
    )
}

/// Any other path: Anthropic's 404 body.
async fn not_found() -> Response {
    body::json_value(404, &error_body("not_found_error", "Not found"))
}
