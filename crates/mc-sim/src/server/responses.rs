//! OpenAI Responses: `POST /v1/responses`, streaming or not.
//!
//! Same approach as Chat Completions: mc-wire decodes the request, the provider prices it
//! with the automatic prefix cache (reported as `input_tokens_details.cached_tokens`), and
//! every body goes through mc-wire's types before it is sent. The simulator stores no
//! responses, so a request that points at one (`previous_response_id`, an `item_reference`,
//! a `conversation`) is answered as OpenAI answers an id it does not know. Reasoning from a
//! script is not sent: the model's reasoning is encrypted on this wire, only counted. A
//! historian call (structured output in the `record_history` format) is answered by the
//! simulated historian, as on the other wires. An overflow is OpenAI's HTTP 400, or, when
//! the server is configured so, a `response.failed` event inside a `200` stream.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use mc_core::{Message, Part, Role};
use mc_wire::WireError;
use mc_wire::responses::{
    Content, ContentPart, FunctionCallItem, Input, Item, MessageItem, MessageRole,
    ResponsesRequest, ResponsesResponse, ResponsesUsage, TextKind, to_conversation,
};
use serde_json::json;

use super::anthropic::{MAX_BODY_BYTES, STOPPED_WHILE_STALLED, label};
use super::body;
use super::historian::{self, Demand, HistorianPlan};
use super::ids;
use super::openai::{arguments, error_response, overloaded};
use super::reply::Reply;
use super::responses_stream;
use super::state::{App, Outcome, SimState};
use crate::{CallRecord, ProviderError, Wire};

/// `POST /v1/responses`.
pub(crate) async fn responses(State(app): State<App>, headers: HeaderMap, body: Bytes) -> Response {
    let label = label(&headers);
    let outcome = app
        .run(move |state, now_ms| respond(state, &body, now_ms, label))
        .await;
    match outcome {
        Ok(Outcome::Respond(response)) => response,
        Ok(Outcome::Later(response)) => {
            tokio::time::sleep(historian::SLOW_HISTORIAN).await;
            response
        }
        Ok(Outcome::Stall) => {
            app.stall().await;
            error_response(500, STOPPED_WHILE_STALLED, "server_error", None, None)
        }
        Err(error) => server_error(&format!("the simulator failed: {error}")),
    }
}

fn respond(state: &mut SimState, body: &[u8], now_ms: u64, label: Option<String>) -> Outcome {
    let request = match ResponsesRequest::decode(body, MAX_BODY_BYTES) {
        Ok(request) => request,
        Err(error) => return wire_error(&error).into(),
    };
    if let Some(reason) = request.stateful_reason() {
        return not_stored(&request, reason).into();
    }
    let conversation = match &request.input {
        Some(Input::Items(items)) => to_conversation(items),
        Some(Input::Text(text)) => vec![Message::new(Role::User, vec![Part::text(text.clone())])],
        None => Vec::new(),
    };
    if conversation.is_empty() {
        return error_response(
            400,
            "Missing required parameter: 'input'.",
            "invalid_request_error",
            Some("input"),
            Some("missing_required_parameter"),
        )
        .into();
    }
    let model = (request.model.as_str(), Wire::OpenAi);
    let plan = historian::plan(
        state.background,
        &mut state.dreamer_steps,
        Demand::ResponsesFormat,
        &request.rest,
        &conversation,
    );
    let later = matches!(plan, Some(HistorianPlan::Later(_)));
    let given = match plan {
        None => None,
        Some(HistorianPlan::Reply(reply) | HistorianPlan::Later(reply)) => Some(reply),
        Some(HistorianPlan::Overloaded) => {
            return overloaded(state, model, now_ms, label, "responses");
        }
        Some(HistorianPlan::Stall) => return Outcome::Stall,
    };
    let answer = state.answer(&conversation, given, model, |provider, output_tokens| {
        provider.openai_responses(&request, output_tokens, now_ms, label)
    });
    let answer = match answer {
        Ok(answer) => answer,
        Err(error) => {
            tracing::info!(wire = "responses", model = %request.model, status = error.status(), "rejected");
            if state.overflow_in_stream
                && request.is_stream()
                && matches!(error, ProviderError::Overflow { .. })
            {
                let head = ResponseHead {
                    id: ids::response_id(),
                    created_s: now_ms / 1000,
                    model: request.model.clone(),
                };
                return failed_stream(&head, &error).into();
            }
            return provider_error(&error).into();
        }
    };
    let record = answer.record;
    let mut reply = answer.reply;
    reply.fill_ids(ids::tool_call_id);
    tracing::info!(
        wire = "responses",
        model = %request.model,
        stream = request.is_stream(),
        prompt = record.prompt_tokens,
        cached = record.cache_read,
        output = record.output_tokens,
        "answered"
    );
    let head = ResponseHead {
        id: ids::response_id(),
        created_s: now_ms / 1000,
        model: request.model.clone(),
    };
    let output = output_items(&reply);
    let built = if request.is_stream() {
        responses_stream::events(&head, &output, &record).map(body::sse)
    } else {
        response(&head, "completed", output, Some(&record))
            .map(|response| body::json(200, response.encode()))
    };
    let response = built.unwrap_or_else(|error| {
        server_error(&format!("the simulator built a bad response: {error}"))
    });
    if later {
        Outcome::Later(response)
    } else {
        response.into()
    }
}

/// What every lifecycle event's response repeats.
#[derive(Debug)]
pub(crate) struct ResponseHead {
    pub(crate) id: String,
    pub(crate) created_s: u64,
    pub(crate) model: String,
}

/// The reply as output items: one assistant message for the text, one function call per
/// tool call.
fn output_items(reply: &Reply) -> Vec<Item> {
    let mut items = Vec::new();
    if let Some(text) = reply.text() {
        let mut message = MessageItem::new(
            MessageRole::Assistant,
            Content::Parts(vec![ContentPart::text(TextKind::Output, text)]),
        );
        if let Some(ContentPart::Text(part)) = match &mut message.content {
            Content::Parts(parts) => parts.first_mut(),
            Content::Text(_) => None,
        } {
            part.rest.insert("annotations".to_owned(), json!([]));
        }
        message
            .rest
            .insert("id".to_owned(), json!(ids::output_item_id("msg_sim_")));
        message.rest.insert("status".to_owned(), json!("completed"));
        items.push(Item::Message(message));
    }
    for (id, name, input) in reply.tool_calls() {
        let mut call = FunctionCallItem::new(id, name, arguments(input));
        call.rest
            .insert("id".to_owned(), json!(ids::output_item_id("fc_sim_")));
        call.rest.insert("status".to_owned(), json!("completed"));
        items.push(Item::FunctionCall(call));
    }
    items
}

/// The response object in `status`, with usage once there is a record.
pub(crate) fn response(
    head: &ResponseHead,
    status: &str,
    output: Vec<Item>,
    record: Option<&CallRecord>,
) -> Result<ResponsesResponse, serde_json::Error> {
    let usage = record.map(|record| {
        let mut usage = ResponsesUsage::new(
            record.prompt_tokens,
            record.cache_read,
            record.output_tokens,
        );
        usage.rest.insert(
            "output_tokens_details".to_owned(),
            json!({"reasoning_tokens": 0}),
        );
        usage
    });
    let mut response = ResponsesResponse::new(
        Some(head.id.clone()),
        Some(status.to_owned()),
        output,
        usage,
    );
    for (key, value) in [
        ("object", json!("response")),
        ("created_at", json!(head.created_s)),
        ("model", json!(head.model)),
        ("error", json!(null)),
        ("incomplete_details", json!(null)),
        ("store", json!(false)),
    ] {
        response.rest.insert(key.to_owned(), value);
    }
    // Through serde once, so the body is exactly what a client decoding it reads back.
    serde_json::from_slice(&response.encode())
}

/// OpenAI's answer to a reference it does not hold.
fn not_stored(request: &ResponsesRequest, reason: &str) -> Response {
    match (reason, request.previous_response_id()) {
        ("previous_response_id", Some(id)) => error_response(
            400,
            &format!("Previous response with id '{id}' not found."),
            "invalid_request_error",
            Some("previous_response_id"),
            Some("previous_response_not_found"),
        ),
        _ => error_response(
            404,
            &format!(
                "The simulator stores no responses, so the request's `{reason}` was not found."
            ),
            "invalid_request_error",
            Some(reason),
            None,
        ),
    }
}

fn wire_error(error: &WireError) -> Response {
    match error {
        WireError::TooLarge { .. } => error_response(
            413,
            &error.to_string(),
            "invalid_request_error",
            None,
            Some("request_too_large"),
        ),
        WireError::Syntax { .. } | WireError::Shape { .. } => {
            error_response(400, &error.to_string(), "invalid_request_error", None, None)
        }
    }
}

/// `error` refused inside a `200` stream: the lifecycle events, then `response.failed`
/// carrying the same error object the HTTP 400 would have.
fn failed_stream(head: &ResponseHead, error: &ProviderError) -> Response {
    let refusal = provider_body(error);
    let failure = refusal.get("error").cloned().unwrap_or_default();
    responses_stream::failed_events(head, failure)
        .map(body::sse)
        .unwrap_or_else(|error| {
            server_error(&format!("the simulator built a bad response: {error}"))
        })
}

fn provider_error(error: &ProviderError) -> Response {
    body::json_value(error.status(), &provider_body(error))
}

/// The provider's error body, its `param` named as on this wire.
fn provider_body(error: &ProviderError) -> serde_json::Value {
    let mut body = error.to_body();
    if let Some(error) = body
        .get_mut("error")
        .and_then(|error| error.as_object_mut())
        && error.contains_key("param")
    {
        error.insert("param".to_owned(), json!("input"));
    }
    body
}

fn server_error(message: &str) -> Response {
    tracing::error!(message, "simulator failure");
    error_response(500, message, "server_error", None, None)
}
