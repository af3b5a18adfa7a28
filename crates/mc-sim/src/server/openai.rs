//! OpenAI Chat Completions: `POST /v1/chat/completions`, streaming or not.
//!
//! Same approach as the Anthropic side: mc-wire decodes the request, the provider prices it
//! (automatic prefix caching, reported as `prompt_tokens_details.cached_tokens`), and every
//! body goes through mc-wire's types before it is sent. Thinking from a script is not sent:
//! Chat Completions does not return reasoning text, only counts it.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use mc_wire::WireError;
use mc_wire::openai::{self, ChatRequest, ChatResponse};
use serde_json::{Value, json};

use super::anthropic::{MAX_BODY_BYTES, STOPPED_WHILE_STALLED, label};
use super::body;
use super::historian::{self, Demand, HistorianPlan};
use super::ids;
use super::openai_stream;
use super::reply::Reply;
use super::state::{App, Outcome, SimState};
use crate::{CallRecord, ProviderError, Wire};

/// `POST /v1/chat/completions`.
pub(crate) async fn chat_completions(
    State(app): State<App>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
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

/// The status OpenAI answers when its engines are overloaded.
const OVERLOADED_STATUS: u16 = 503;

fn respond(state: &mut SimState, body: &[u8], now_ms: u64, label: Option<String>) -> Outcome {
    let request = match ChatRequest::decode(body, MAX_BODY_BYTES) {
        Ok(request) => request,
        Err(error) => return wire_error(&error).into(),
    };
    if request.messages.is_empty() {
        return error_response(
            400,
            "[] is too short - 'messages'",
            "invalid_request_error",
            Some("messages"),
            Some("empty_array"),
        )
        .into();
    }
    let conversation = match openai::to_conversation(&request) {
        Ok(conversation) => conversation,
        Err(error) => return wire_error(&error).into(),
    };
    let model = (request.model.as_str(), Wire::OpenAi);
    let plan = historian::plan(
        state.background,
        &mut state.dreamer_steps,
        Demand::ChatFunction,
        &request.rest,
        &conversation,
    );
    let later = matches!(plan, Some(HistorianPlan::Later(_)));
    let given = match plan {
        None => None,
        Some(HistorianPlan::Reply(reply) | HistorianPlan::Later(reply)) => Some(reply),
        Some(HistorianPlan::Overloaded) => {
            return overloaded(state, model, now_ms, label, "openai");
        }
        Some(HistorianPlan::Stall) => return Outcome::Stall,
    };
    let answer = state.answer(&conversation, given, model, |provider, output_tokens| {
        provider.openai(&request, output_tokens, now_ms, label)
    });
    let answer = match answer {
        Ok(answer) => answer,
        Err(error) => {
            tracing::info!(wire = "openai", model = %request.model, status = error.status(), "rejected");
            return provider_error(&error).into();
        }
    };
    let record = answer.record;
    let mut reply = answer.reply;
    reply.fill_ids(ids::tool_call_id);
    tracing::info!(
        wire = "openai",
        model = %request.model,
        stream = request.is_stream(),
        prompt = record.prompt_tokens,
        cached = record.cache_read,
        output = record.output_tokens,
        "answered"
    );
    let head = Head {
        id: ids::completion_id(),
        created_s: now_ms / 1000,
        model: request.model.clone(),
    };
    let built = if request.is_stream() {
        openai_stream::events(&head, &reply, &record, request.includes_stream_usage())
            .map(body::sse)
    } else {
        response_body(&head, &reply, &record).map(|response| body::json(200, response.encode()))
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

/// OpenAI's overload error for a historian call in [`HistorianMode::Overloaded`], recorded
/// in the ledger like any answer. Chat and Responses answer it alike.
///
/// [`HistorianMode::Overloaded`]: super::historian::HistorianMode::Overloaded
pub(crate) fn overloaded(
    state: &mut SimState,
    model: (&str, Wire),
    now_ms: u64,
    label: Option<String>,
    wire: &'static str,
) -> Outcome {
    state
        .provider
        .record_overloaded(model, OVERLOADED_STATUS, now_ms, label);
    tracing::info!(wire, model = model.0, "historian call overloaded");
    error_response(
        OVERLOADED_STATUS,
        "The engine is currently overloaded, please try again later.",
        "server_error",
        None,
        None,
    )
    .into()
}

/// The fields every body and chunk of one completion repeats.
#[derive(Debug)]
pub(crate) struct Head {
    pub(crate) id: String,
    pub(crate) created_s: u64,
    pub(crate) model: String,
}

/// The `fingerprint` a real deployment reports; fixed, as the simulator never changes.
pub(crate) const SYSTEM_FINGERPRINT: &str = "fp_sim";

fn response_body(
    head: &Head,
    reply: &Reply,
    record: &CallRecord,
) -> Result<ChatResponse, serde_json::Error> {
    let mut message = json!({
        "role": "assistant",
        "content": reply.text(),
        "refusal": null,
        "annotations": [],
    });
    let calls: Vec<Value> = reply
        .tool_calls()
        .map(|(id, name, input)| {
            json!({
                "id": id,
                "type": "function",
                "function": { "name": name, "arguments": arguments(input) },
            })
        })
        .collect();
    if let (false, Some(object)) = (calls.is_empty(), message.as_object_mut()) {
        object.insert("tool_calls".to_owned(), Value::Array(calls));
    }
    serde_json::from_value(json!({
        "id": head.id,
        "object": "chat.completion",
        "created": head.created_s,
        "model": head.model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": reply.stop_reason.as_openai(),
        }],
        "usage": usage_json(record),
        "service_tier": "default",
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }))
}

/// A tool call's arguments as OpenAI sends them: a JSON string. Recorded arguments that were
/// not JSON (kept as a JSON string) go back out as that string.
pub(crate) fn arguments(input: &Value) -> String {
    match input {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

/// The usage object: the whole prompt, the cached part, the output.
pub(crate) fn usage_json(record: &CallRecord) -> Value {
    json!({
        "prompt_tokens": record.prompt_tokens,
        "completion_tokens": record.output_tokens,
        "total_tokens": record.prompt_tokens + record.output_tokens,
        "prompt_tokens_details": { "cached_tokens": record.cache_read, "audio_tokens": 0 },
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    })
}

/// OpenAI's error body.
pub(crate) fn error_response(
    status: u16,
    message: &str,
    kind: &str,
    param: Option<&str>,
    code: Option<&str>,
) -> Response {
    body::json_value(
        status,
        &json!({ "error": { "message": message, "type": kind, "param": param, "code": code } }),
    )
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

fn provider_error(error: &ProviderError) -> Response {
    body::json_value(error.status(), &error.to_body())
}

fn server_error(message: &str) -> Response {
    tracing::error!(message, "simulator failure");
    error_response(500, message, "server_error", None, None)
}
