//! Claude Code session files (`~/.claude/projects/<project>/<session-id>.jsonl`).
//!
//! Each line is an entry: `type` (`user`, `assistant`, `summary`, `system`, `progress`, …),
//! `uuid`, `parentUuid`, `timestamp` (ISO 8601), `isSidechain`, `isMeta`, and for user and
//! assistant entries an Anthropic-shaped `message`. The file is a tree, not a list: rewinding
//! a conversation gives a parent a second child, and compaction starts a new root. The live
//! conversation is the branch found by following `parentUuid` back from the last entry
//! (sidechain entries, a sub-agent's own conversation, are never its leaf or on it).
//!
//! On that branch:
//! - `user` entries are messages, `isMeta` ones included (Claude Code sends them; they are
//!   only hidden from its display); consecutive user entries (one per parallel tool result)
//!   merge into one message, as the client merges them before sending;
//! - `assistant` entries sharing `message.id` are one API response written one content block
//!   per line; they merge into one message, even when tool results were written between
//!   them, and the usage of the response's last line is the one kept;
//! - assistant entries of model `<synthetic>` (errors and notices the client wrote itself)
//!   were never a model call and are left out of the history;
//! - other entry types (`system`, `progress`, summaries, snapshots) are not sent to the
//!   model and are skipped.
//!
//! Each merged response is a step whose request is every message before it on the branch.
//! Its time is the timestamp of the branch entry just before the response, when the client
//! sent the request; times are relative to the first step's.
//!
//! System prompt and tools are not in these files; see `stand_in` for what replaces them.

use std::collections::HashMap;
use std::sync::Arc;

use mc_core::{Message, Role};
use mc_wire::anthropic::{self, BlockContent, MessageRole, MessagesResponse, Usage};
use serde::Deserialize;
use serde_json::Value;

use super::error::{FileErrors, Location};
use super::stand_in::{self, SeenTool};
use super::timestamp::parse_iso8601_ms;
use super::{RecordedUsage, Recording, RecordingError, RecordingFormat, Step};

/// The model name Claude Code gives assistant entries it wrote itself.
const SYNTHETIC_MODEL: &str = "<synthetic>";

/// The fields of an entry the loader reads; everything else is ignored.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    #[serde(rename = "type", default)]
    kind: String,
    uuid: Option<String>,
    parent_uuid: Option<String>,
    timestamp: Option<String>,
    #[serde(default)]
    is_sidechain: bool,
    message: Option<Value>,
}

#[derive(Debug)]
struct Line {
    number: usize,
    entry: Entry,
}

/// One merged API response on the branch.
struct Response {
    /// Where the response sits in the branch's messages.
    index: usize,
    id: String,
    model: String,
    request_ms: i64,
    usage: Option<Usage>,
}

pub(super) fn load(
    name: String,
    bytes: &[u8],
    errors: FileErrors<'_>,
) -> Result<Recording, RecordingError> {
    let lines = read_lines(bytes, errors)?;
    let branch = live_branch(&lines);
    let (messages, responses) = conversation(&branch, errors)?;
    let Some(first) = responses.first() else {
        return Err(errors.no_steps(
            RecordingFormat::ClaudeCode,
            "its live branch has no assistant response",
        ));
    };
    let model = first.model.clone();
    let start_ms = first.request_ms;
    let messages = Arc::new(messages);
    let mut at_ms = 0;
    let mut steps = Vec::with_capacity(responses.len());
    for response in responses {
        let Some(message) = messages.get(response.index) else {
            continue;
        };
        // Monotonic even if the clock stepped back between lines.
        at_ms = at_ms.max(u64::try_from(response.request_ms - start_ms).unwrap_or(0));
        let usage = response.usage.as_ref();
        steps.push(Step {
            at_ms,
            messages: Arc::clone(&messages),
            len: response.index,
            response: message.clone(),
            output_tokens: usage.and_then(|usage| usage.output_tokens),
            recorded: usage.map(|usage| RecordedUsage {
                prompt_tokens: usage.prompt_tokens(),
                cache_read: usage.cache_read_input_tokens,
                cache_write: usage.cache_creation_input_tokens,
                input: usage.input_tokens,
            }),
            context: None,
        });
    }
    Ok(Recording {
        name,
        format: RecordingFormat::ClaudeCode,
        model,
        system: vec![stand_in::SYSTEM_PROMPT.to_owned()],
        tools: stand_in::tools(&seen_tools(&lines)),
        stand_ins: stand_in::STAND_INS.map(str::to_owned).to_vec(),
        steps,
    })
}

fn read_lines(bytes: &[u8], errors: FileErrors<'_>) -> Result<Vec<Line>, RecordingError> {
    let mut lines = Vec::new();
    for (index, text) in bytes.split(|&b| b == b'\n').enumerate() {
        if text.trim_ascii().is_empty() {
            continue;
        }
        let number = index + 1;
        let entry = serde_json::from_slice(text)
            .map_err(|source| errors.json(Location::Line(number), "session entry", source))?;
        lines.push(Line { number, entry });
    }
    Ok(lines)
}

/// The entries from the root to the last non-sidechain entry, following `parentUuid`.
///
/// A parent missing from the file ends the branch there (a file cut by hand, a session
/// continued from another file); a cycle ends it too, after every entry has been visited.
fn live_branch(lines: &[Line]) -> Vec<&Line> {
    let by_uuid: HashMap<&str, &Line> = lines
        .iter()
        .filter_map(|line| Some((line.entry.uuid.as_deref()?, line)))
        .collect();
    let leaf = lines
        .iter()
        .rev()
        .find(|line| line.entry.uuid.is_some() && !line.entry.is_sidechain);
    let mut branch = Vec::new();
    let mut next = leaf;
    while let Some(line) = next {
        if branch.len() == lines.len() {
            break;
        }
        branch.push(line);
        next = line
            .entry
            .parent_uuid
            .as_deref()
            .and_then(|parent| by_uuid.get(parent).copied());
    }
    branch.reverse();
    branch
}

/// The branch's messages as the client sends them, and where each response sits.
fn conversation(
    branch: &[&Line],
    errors: FileErrors<'_>,
) -> Result<(Vec<Message>, Vec<Response>), RecordingError> {
    let mut messages: Vec<Message> = Vec::new();
    let mut responses: Vec<Response> = Vec::new();
    let mut previous_ms: Option<i64> = None;
    for line in branch {
        let entry = &line.entry;
        let at = Location::Line(line.number);
        let entry_ms = match entry.timestamp.as_deref() {
            Some(text) => Some(parse_iso8601_ms(text).ok_or_else(|| {
                errors.invalid(
                    at,
                    format!("timestamp `{text}` is not an ISO 8601 date-time"),
                )
            })?),
            None => None,
        };
        if entry.is_sidechain {
            continue;
        }
        let message = || {
            entry.message.clone().ok_or_else(|| {
                errors.invalid(at, format!("a `{}` entry without `message`", entry.kind))
            })
        };
        match entry.kind.as_str() {
            "user" => {
                let wire: anthropic::Message = serde_json::from_value(message()?)
                    .map_err(|source| errors.json(at, "user message", source))?;
                let user = anthropic::to_message(&wire);
                match messages.last_mut() {
                    Some(last) if last.role == Role::User => last.parts.extend(user.parts),
                    _ => messages.push(user),
                }
            }
            "assistant" => {
                let raw = message()?;
                if raw.get("model").and_then(Value::as_str) == Some(SYNTHETIC_MODEL) {
                    continue;
                }
                let wire: MessagesResponse = serde_json::from_value(raw)
                    .map_err(|source| errors.json(at, "assistant message", source))?;
                let parts = anthropic::to_message(&anthropic::Message::new(
                    MessageRole::Assistant,
                    BlockContent::Blocks(wire.content.clone()),
                ))
                .parts;
                let open = responses.last_mut().filter(|open| open.id == wire.id);
                match open.and_then(|open| Some((messages.get_mut(open.index)?, open))) {
                    Some((merged, open)) => {
                        merged.parts.extend(parts);
                        if wire.usage.is_some() {
                            open.usage = wire.usage.clone();
                        }
                    }
                    None => {
                        let Some(request_ms) = previous_ms.or(entry_ms) else {
                            return Err(errors.invalid(
                                at,
                                "an assistant response with no timestamp on it or before it",
                            ));
                        };
                        responses.push(Response {
                            index: messages.len(),
                            model: wire.model().unwrap_or_default().to_owned(),
                            id: wire.id.clone(),
                            request_ms,
                            usage: wire.usage.clone(),
                        });
                        messages.push(Message::new(Role::Assistant, parts));
                    }
                }
            }
            _ => {}
        }
        if entry_ms.is_some() {
            previous_ms = entry_ms;
        }
    }
    Ok((messages, responses))
}

/// Every tool the file's assistant entries call, on any branch, with the inputs passed.
fn seen_tools(lines: &[Line]) -> Vec<SeenTool<'_>> {
    let mut seen: Vec<SeenTool<'_>> = Vec::new();
    let blocks = lines
        .iter()
        .filter(|line| line.entry.kind == "assistant")
        .filter_map(|line| line.entry.message.as_ref()?.get("content")?.as_array())
        .flatten()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_use"));
    for block in blocks {
        let Some(name) = block.get("name").and_then(Value::as_str) else {
            continue;
        };
        let input = block.get("input");
        match seen.iter_mut().find(|tool| tool.name == name) {
            Some(tool) => tool.inputs.extend(input),
            None => seen.push(SeenTool {
                name,
                inputs: input.into_iter().collect(),
            }),
        }
    }
    seen
}
