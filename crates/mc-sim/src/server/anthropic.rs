//! The Anthropic Messages API: `POST /v1/messages` and `POST /v1/messages/count_tokens`.
//!
//! Requests are decoded with mc-wire's codec, so a body the real provider would reject is
//! rejected here too, with the provider's error shape. Responses are built as JSON in the
//! provider's key order and passed through mc-wire's types before encoding, which checks
//! every body we send against the same codec the proxy uses.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use mc_core::Part;
use mc_wire::WireError;
use mc_wire::anthropic::{self, MessagesRequest, MessagesResponse};
use serde_json::{Value, json};

use super::anthropic_stream;
use super::body::{self, with_request_id};
use super::historian::{self, Demand, HistorianPlan};
use super::ids;
use super::reply::Reply;
use super::state::{App, Outcome, SimState};
use crate::{CallRecord, ProviderError, Wire};

/// The status of Anthropic's `overloaded_error`.
const OVERLOADED_STATUS: u16 = 529;

/// Anthropic's request size limit for the Messages API (32 MB).
pub(crate) const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// The header a harness may set to label a call in the ledger.
pub(crate) const LABEL_HEADER: &str = "x-sim-label";

/// What a stalled call gets once the server stops: it was never going to be answered.
pub(crate) const STOPPED_WHILE_STALLED: &str =
    "the simulator stopped before answering this stalled call";

/// `POST /v1/messages`.
pub(crate) async fn messages(State(app): State<App>, headers: HeaderMap, body: Bytes) -> Response {
    let label = label(&headers);
    let request_id = ids::request_id();
    let outcome = app
        .run(move |state, now_ms| respond(state, &body, now_ms, label))
        .await;
    let response = match outcome {
        Ok(Outcome::Respond(response)) => response,
        Ok(Outcome::Later(response)) => {
            tokio::time::sleep(historian::SLOW_HISTORIAN).await;
            response
        }
        Ok(Outcome::Stall) => {
            app.stall().await;
            body::json_value(500, &error_body("api_error", STOPPED_WHILE_STALLED))
        }
        Err(error) => api_error(&format!("the simulator failed: {error}")),
    };
    with_request_id(response, &request_id)
}

/// `POST /v1/messages/count_tokens`.
pub(crate) async fn count_tokens(State(app): State<App>, body: Bytes) -> Response {
    let request_id = ids::request_id();
    let response = app
        .run(move |state, _now_ms| {
            let request = match MessagesRequest::decode(&body, MAX_BODY_BYTES) {
                Ok(request) => request,
                Err(error) => return wire_error(&error),
            };
            let input_tokens = state.provider.count_anthropic(&request);
            body::json_value(200, &json!({ "input_tokens": input_tokens }))
        })
        .await
        .unwrap_or_else(|error| api_error(&format!("the simulator failed: {error}")));
    with_request_id(response, &request_id)
}

/// The ledger label a harness sent, if any.
pub(crate) fn label(headers: &HeaderMap) -> Option<String> {
    headers
        .get(LABEL_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

fn respond(state: &mut SimState, body: &[u8], now_ms: u64, label: Option<String>) -> Outcome {
    let request = match MessagesRequest::decode(body, MAX_BODY_BYTES) {
        Ok(request) => request,
        Err(error) => return wire_error(&error).into(),
    };
    if let Some(message) = missing_field(&request) {
        return invalid_request(message).into();
    }
    let conversation = anthropic::to_conversation(&request);
    let model = (request.model.as_str(), Wire::Anthropic);
    let plan = historian::plan(
        state.background,
        &mut state.dreamer_steps,
        Demand::AnthropicTool,
        &request.rest,
        &conversation,
    );
    let later = matches!(plan, Some(HistorianPlan::Later(_)));
    let given = match plan {
        None => None,
        Some(HistorianPlan::Reply(reply) | HistorianPlan::Later(reply)) => Some(reply),
        Some(HistorianPlan::Overloaded) => {
            state
                .provider
                .record_overloaded(model, OVERLOADED_STATUS, now_ms, label);
            tracing::info!(wire = "anthropic", model = %request.model, "historian call overloaded");
            return body::json_value(
                OVERLOADED_STATUS,
                &error_body("overloaded_error", "Overloaded"),
            )
            .into();
        }
        Some(HistorianPlan::Stall) => return Outcome::Stall,
    };
    let answer = state.answer(&conversation, given, model, |provider, output_tokens| {
        provider.anthropic(&request, output_tokens, now_ms, label)
    });
    let answer = match answer {
        Ok(answer) => answer,
        Err(error) => {
            tracing::info!(wire = "anthropic", model = %request.model, status = error.status(), "rejected");
            return provider_error(&error).into();
        }
    };
    let record = answer.record;
    let mut reply = answer.reply;
    reply.fill_ids(ids::tool_use_id);
    tracing::info!(
        wire = "anthropic",
        model = %request.model,
        stream = request.is_stream(),
        input = record.input_tokens,
        cache_read = record.cache_read,
        cache_write = record.cache_write_5m + record.cache_write_1h,
        output = record.output_tokens,
        "answered"
    );
    let id = ids::message_id();
    let built = if request.is_stream() {
        anthropic_stream::events(&id, &request.model, &reply, &record).map(body::sse)
    } else {
        response_body(&id, &request.model, &reply, &record)
            .map(|response| body::json(200, response.encode()))
    };
    let response = built
        .unwrap_or_else(|error| api_error(&format!("the simulator built a bad response: {error}")));
    if later {
        Outcome::Later(response)
    } else {
        response.into()
    }
}

/// The checks the provider makes beyond the codec's shape checks.
fn missing_field(request: &MessagesRequest) -> Option<&'static str> {
    if !request.rest.contains_key("max_tokens") {
        return Some("max_tokens: Field required");
    }
    if request.messages.is_empty() {
        return Some("messages: at least one message is required");
    }
    None
}

/// The non-streaming response.
fn response_body(
    id: &str,
    model: &str,
    reply: &Reply,
    record: &CallRecord,
) -> Result<MessagesResponse, serde_json::Error> {
    let content: Vec<Value> = reply.parts.iter().filter_map(block_json).collect();
    serde_json::from_value(json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": reply.stop_reason.as_anthropic(),
        "stop_sequence": null,
        "usage": usage_json(record, record.output_tokens),
    }))
}

/// One generated block in full, as the non-streaming response carries it.
fn block_json(part: &Part) -> Option<Value> {
    match part {
        Part::Text { text, .. } => Some(json!({ "type": "text", "text": text })),
        Part::ToolCall { id, name, input } => Some(json!({
            "type": "tool_use", "id": id, "name": name, "input": tool_input(input),
        })),
        Part::Thinking { text, signature } => Some(json!({
            "type": "thinking", "thinking": text, "signature": signature.as_deref().unwrap_or(""),
        })),
        Part::RedactedThinking { data } => {
            Some(json!({ "type": "redacted_thinking", "data": data }))
        }
        Part::ToolResult { .. } | Part::Media { .. } | Part::Unknown { .. } => None,
    }
}

/// Anthropic tool input is always an object; a recorded OpenAI call whose arguments were not
/// JSON is wrapped so it still is.
pub(crate) fn tool_input(input: &Value) -> Value {
    if input.is_object() {
        input.clone()
    } else {
        json!({ "input": input })
    }
}

/// The usage object, with the 5m/1h split, reporting `output_tokens`.
pub(crate) fn usage_json(record: &CallRecord, output_tokens: u64) -> Value {
    json!({
        "input_tokens": record.input_tokens,
        "cache_creation_input_tokens": record.cache_write_5m + record.cache_write_1h,
        "cache_read_input_tokens": record.cache_read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": record.cache_write_5m,
            "ephemeral_1h_input_tokens": record.cache_write_1h,
        },
        "output_tokens": output_tokens,
        "service_tier": "standard",
    })
}

/// The provider's error body for `error.type` `kind`.
pub(crate) fn error_body(kind: &str, message: &str) -> Value {
    json!({ "type": "error", "error": { "type": kind, "message": message } })
}

fn invalid_request(message: &str) -> Response {
    body::json_value(400, &error_body("invalid_request_error", message))
}

fn wire_error(error: &WireError) -> Response {
    match error {
        WireError::TooLarge { .. } => body::json_value(
            413,
            &error_body(
                "request_too_large",
                "Request exceeds the maximum allowed number of bytes.",
            ),
        ),
        WireError::Syntax { .. } | WireError::Shape { .. } => invalid_request(&error.to_string()),
    }
}

fn provider_error(error: &ProviderError) -> Response {
    body::json_value(error.status(), &error.to_body())
}

/// A 500 `api_error`, for failures of the simulator itself.
pub(crate) fn api_error(message: &str) -> Response {
    tracing::error!(message, "simulator failure");
    body::json_value(500, &error_body("api_error", message))
}
