//! Raw Anthropic API captures: one `{request, response}` object per line, as a logging proxy
//! (claude-trace) writes them.
//!
//! A line is `{request: {timestamp, method, url, headers, body}, response: {timestamp,
//! status_code, headers, body | body_raw}}`; `body_raw` is the SSE text of a streamed
//! answer, which is folded into the final message the client saw.
//!
//! A capture interleaves the agent's own calls with the client's small side calls (Claude
//! Code asks a cheaper model for titles, topic checks and command summaries). Only the main
//! agent's calls are steps: the calls of the session's primary model, the one whose requests
//! carry tools and the longest histories. In `shared/data/anthropic-capture` that keeps the
//! 17 `claude-sonnet-4-20250514` calls and leaves out 47 single-message
//! `claude-3-5-haiku-20241022` side calls; a main-model call without a 200 answer (a retried
//! overload) is no step either, having no response to replay.
//!
//! Each step's request is the body's `messages` verbatim, so the compaction call (the whole
//! history plus a summary request) and the fresh one-message history after it appear as the
//! client really sent them; the fresh history starts a new shared `Arc`.
//!
//! [`Recording::system`] and [`Recording::tools`] are those of the first main call. A call
//! sent with a different system prompt or tool list (Claude Code's compaction call sends a
//! summariser system block and a single `Read` tool) carries its own in [`Step::context`],
//! so a replay sends what the client really sent.

use std::sync::Arc;

use mc_wire::anthropic::{
    self, BlockContent, ContentBlock, MessageAccumulator, MessageRole, MessagesRequest,
    MessagesResponse, StreamEvent, Tool,
};
use mc_wire::sse::SseDecoder;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::error::{FileErrors, Location};
use super::history::{StepDraft, share_histories};
use super::{RecordedUsage, Recording, RecordingError, RecordingFormat, StepContext, ToolSpec};

/// Largest request or response body decoded: far above any real one (the capture's largest
/// is well under 1 MiB), yet a bound.
const LIMIT_BYTES: usize = 64 << 20;

#[derive(Deserialize)]
struct Pair {
    request: CapturedRequest,
    response: CapturedResponse,
}

#[derive(Deserialize)]
struct CapturedRequest {
    /// Unix seconds with a fraction.
    timestamp: f64,
    body: Box<RawValue>,
}

#[derive(Deserialize)]
struct CapturedResponse {
    status_code: u16,
    #[serde(default)]
    body: Option<Box<RawValue>>,
    #[serde(default)]
    body_raw: Option<String>,
}

/// One decoded line.
struct Call {
    line: usize,
    timestamp_s: f64,
    request: MessagesRequest,
    response: CapturedResponse,
}

pub(super) fn load(
    name: String,
    bytes: &[u8],
    errors: FileErrors<'_>,
) -> Result<Recording, RecordingError> {
    let calls = read_calls(bytes, errors)?;
    let Some(model) = primary_model(&calls) else {
        return Err(errors.no_steps(RecordingFormat::AnthropicCapture, "it holds no request"));
    };
    let mut main: Vec<&Call> = calls
        .iter()
        .filter(|call| call.request.model == model && call.response.status_code == 200)
        .collect();
    // Lines are written when answers complete; requests are replayed in the order sent.
    main.sort_by(|a, b| a.timestamp_s.total_cmp(&b.timestamp_s));
    let Some(first) = main.first() else {
        return Err(errors.no_steps(
            RecordingFormat::AnthropicCapture,
            "no call of its primary model was answered with status 200",
        ));
    };
    let system = system_texts(first.request.system.as_ref());
    let tools: Vec<ToolSpec> = first
        .request
        .tools
        .iter()
        .flatten()
        .map(tool_spec)
        .collect();
    let start_s = first.timestamp_s;
    let session_context = Arc::new(StepContext {
        system: system.clone(),
        tools: tools.clone(),
    });
    let mut drafts = Vec::with_capacity(main.len());
    for call in main {
        let at = Location::Line(call.line);
        let response = response_message(&call.response, at, errors)?;
        let usage = response.usage.as_ref();
        let content = BlockContent::Blocks(response.content.clone());
        let call_context = StepContext {
            system: system_texts(call.request.system.as_ref()),
            tools: call.request.tools.iter().flatten().map(tool_spec).collect(),
        };
        drafts.push(StepDraft {
            context: (call_context != *session_context).then(|| Arc::new(call_context)),
            at_ms: millis_between(start_s, call.timestamp_s),
            request: anthropic::to_conversation(&call.request),
            response: anthropic::to_message(&anthropic::Message::new(
                MessageRole::Assistant,
                content,
            )),
            output_tokens: usage.and_then(|usage| usage.output_tokens),
            recorded: usage.map(|usage| RecordedUsage {
                prompt_tokens: usage.prompt_tokens(),
                cache_read: usage.cache_read_input_tokens,
                cache_write: usage.cache_creation_input_tokens,
                input: usage.input_tokens,
            }),
        });
    }
    Ok(Recording {
        name,
        format: RecordingFormat::AnthropicCapture,
        model,
        system,
        tools,
        stand_ins: Vec::new(),
        steps: share_histories(drafts),
    })
}

fn read_calls(bytes: &[u8], errors: FileErrors<'_>) -> Result<Vec<Call>, RecordingError> {
    let mut calls = Vec::new();
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.trim_ascii().is_empty() {
            continue;
        }
        let at = Location::Line(index + 1);
        let pair: Pair = serde_json::from_slice(line)
            .map_err(|source| errors.json(at, "capture line", source))?;
        let request = MessagesRequest::decode(pair.request.body.get().as_bytes(), LIMIT_BYTES)
            .map_err(|source| errors.wire(at, source))?;
        calls.push(Call {
            line: index + 1,
            timestamp_s: pair.request.timestamp,
            request,
            response: pair.response,
        });
    }
    Ok(calls)
}

/// The model of the main agent: its requests carry tools and the longest histories, where
/// side calls send one short message with no tools.
fn primary_model(calls: &[Call]) -> Option<String> {
    let mut models: Vec<(&str, bool, usize)> = Vec::new();
    for call in calls {
        let has_tools = call
            .request
            .tools
            .as_ref()
            .is_some_and(|tools| !tools.is_empty());
        let messages = call.request.messages.len();
        match models
            .iter_mut()
            .find(|(model, ..)| *model == call.request.model)
        {
            Some((_, tools, longest)) => {
                *tools |= has_tools;
                *longest = (*longest).max(messages);
            }
            None => models.push((&call.request.model, has_tools, messages)),
        }
    }
    models
        .into_iter()
        .max_by_key(|&(_, has_tools, longest)| (has_tools, longest))
        .map(|(model, ..)| model.to_owned())
}

/// The answer as the client saw it: the JSON body, or the SSE stream folded into one message.
fn response_message(
    response: &CapturedResponse,
    at: Location,
    errors: FileErrors<'_>,
) -> Result<MessagesResponse, RecordingError> {
    if let Some(raw) = &response.body_raw {
        let mut decoder = SseDecoder::new();
        let events = decoder
            .push(raw.as_bytes())
            .map_err(|source| errors.sse(at, source))?;
        decoder.finish().map_err(|source| errors.sse(at, source))?;
        let mut accumulator = MessageAccumulator::new();
        for event in &events {
            StreamEvent::decode(event.data.as_bytes(), LIMIT_BYTES)
                .and_then(|event| accumulator.push(&event))
                .map_err(|source| errors.wire(at, source))?;
        }
        return accumulator
            .finish()
            .ok_or_else(|| errors.invalid(at, "the SSE response has no message_start event"));
    }
    match &response.body {
        Some(body) => MessagesResponse::decode(body.get().as_bytes(), LIMIT_BYTES)
            .map_err(|source| errors.wire(at, source)),
        None => Err(errors.invalid(
            at,
            "the response has neither `body` nor `body_raw`, so there is no answer to replay",
        )),
    }
}

/// The system prompt's text blocks (a bare string is one block).
fn system_texts(system: Option<&BlockContent>) -> Vec<String> {
    match system {
        None => Vec::new(),
        Some(BlockContent::Text(text)) => vec![text.clone()],
        Some(BlockContent::Blocks(blocks)) => blocks
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(text) => Some(text.text.clone()),
                _ => None,
            })
            .collect(),
    }
}

fn tool_spec(tool: &Tool) -> ToolSpec {
    ToolSpec {
        name: tool.name.clone(),
        description: tool
            .rest
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        input_schema: tool
            .rest
            .get("input_schema")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
    }
}

/// Milliseconds from `start_s` to `at_s`, clamped at zero.
fn millis_between(start_s: f64, at_s: f64) -> u64 {
    let millis = ((at_s - start_s) * 1_000.0).round();
    if millis.is_finite() && millis > 0.0 {
        // Saturating float-to-int cast; a capture spans hours, far below u64::MAX ms.
        millis as u64
    } else {
        0
    }
}
