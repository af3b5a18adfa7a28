//! Rendering a strategy's call as the client would send it on the wire.
//!
//! Every strategy goes through these two functions, so the cache markers a request carries
//! depend only on the conversation sent, never on which strategy built it.

use mc_core::Message;

use super::CacheMarks;
use mc_wire::WireError;
use mc_wire::anthropic::{self, BlockContent, ContentBlock, MessagesRequest, Tool};
use mc_wire::openai::{self, ChatMessage, ChatRequest, ChatRole, ChatTool};
use serde_json::{Map, Value, json};

use crate::recording::ToolSpec;

/// How many of the newest messages get a breakpoint on their last block, as Claude Code does.
const MARKED_MESSAGES: usize = 2;

/// The Anthropic Messages request Claude Code would send for this conversation.
///
/// Breakpoints as Claude Code places them: `cache_control: ephemeral` (5 minutes) on the last
/// system block and on the last block of each of the two newest messages, so the next turn
/// reads the prefix this one wrote. That is at most 3 of the provider's 4.
///
/// Fails only if the model name cannot be carried in JSON, which a `String` always can; the
/// error is the codec's.
pub fn render_anthropic(
    model: &str,
    max_tokens: u64,
    system: &[String],
    tools: &[ToolSpec],
    messages: &[Message],
) -> Result<MessagesRequest, WireError> {
    let mut request = render_unmarked(model, max_tokens, system, tools, messages)?;
    let newest = request.messages.len().saturating_sub(MARKED_MESSAGES);
    let marks = CacheMarks {
        system: true,
        slots: request.messages[newest..]
            .iter()
            .enumerate()
            .filter_map(|(offset, message)| match &message.content {
                BlockContent::Blocks(blocks) => {
                    Some((newest + offset, blocks.len().checked_sub(1)?))
                }
                BlockContent::Text(_) => None,
            })
            .collect(),
        one_hour: false,
    };
    apply_marks(&mut request, &marks);
    Ok(request)
}

/// Like [`render_anthropic`], with the strategy's own breakpoints instead of Claude Code's:
/// exactly the blocks `marks` names carry a marker.
pub fn render_anthropic_marked(
    model: &str,
    max_tokens: u64,
    system: &[String],
    tools: &[ToolSpec],
    messages: &[Message],
    marks: &CacheMarks,
) -> Result<MessagesRequest, WireError> {
    let mut request = render_unmarked(model, max_tokens, system, tools, messages)?;
    apply_marks(&mut request, marks);
    Ok(request)
}

/// The request with no `cache_control` anywhere.
fn render_unmarked(
    model: &str,
    max_tokens: u64,
    system: &[String],
    tools: &[ToolSpec],
    messages: &[Message],
) -> Result<MessagesRequest, WireError> {
    // Decoding a template fixes the key order (model, max_tokens, system, tools, messages),
    // which the request type keeps private.
    let template = json!({
        "model": model, "max_tokens": max_tokens, "system": [], "tools": [], "messages": [],
    });
    let mut request = MessagesRequest::decode(template.to_string().as_bytes(), usize::MAX)?;
    request.system = (!system.is_empty())
        .then(|| BlockContent::Blocks(system.iter().map(ContentBlock::text).collect()));
    request.tools = (!tools.is_empty()).then(|| tools.iter().map(anthropic_tool).collect());
    request.messages = messages.iter().map(anthropic::from_message).collect();
    Ok(request)
}

/// Puts a marker on the last system block (when asked) and on each named (message, block).
fn apply_marks(request: &mut MessagesRequest, marks: &CacheMarks) {
    let marker = if marks.one_hour {
        json!({"type": "ephemeral", "ttl": "1h"})
    } else {
        ephemeral()
    };
    if marks.system {
        request.mark_last_system_block(marker.clone());
    }
    for &(message, block) in &marks.slots {
        request.mark_message_block(message, block, marker.clone());
    }
}

/// The Chat Completions request for this conversation: the system prompt as leading system
/// messages, then the conversation. No breakpoints: OpenAI caches prefixes on its own.
pub fn render_openai(
    model: &str,
    system: &[String],
    tools: &[ToolSpec],
    messages: &[Message],
) -> ChatRequest {
    let mut chat: Vec<ChatMessage> = system
        .iter()
        .map(|text| ChatMessage::text(ChatRole::System, text.clone()))
        .collect();
    chat.extend(messages.iter().flat_map(openai::from_message));
    let mut request = ChatRequest::new(model, chat);
    request.tools = (!tools.is_empty()).then(|| tools.iter().map(openai_tool).collect());
    request
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

pub(super) fn anthropic_tool(tool: &ToolSpec) -> Tool {
    let mut rest = Map::new();
    rest.insert(
        "description".to_owned(),
        Value::from(tool.description.clone()),
    );
    rest.insert("input_schema".to_owned(), tool.input_schema.clone());
    Tool::new(tool.name.clone(), rest)
}

pub(super) fn openai_tool(tool: &ToolSpec) -> ChatTool {
    let function = json!({
        "name": tool.name, "description": tool.description, "parameters": tool.input_schema,
    });
    let mut raw = Map::new();
    raw.insert("type".to_owned(), Value::from("function"));
    raw.insert("function".to_owned(), function);
    ChatTool {
        raw: std::sync::Arc::new(raw),
    }
}

#[cfg(test)]
mod tests {
    use mc_core::{Part, Role};

    use super::*;

    fn conversation() -> Vec<Message> {
        vec![
            Message::new(Role::User, vec![Part::text("list files")]),
            Message::new(
                Role::Assistant,
                vec![
                    Part::text("running ls"),
                    Part::ToolCall {
                        id: "c1".into(),
                        name: "Bash".into(),
                        input: json!({"command": "ls"}),
                    },
                ],
            ),
            Message::new(
                Role::User,
                vec![Part::ToolResult {
                    call_id: "c1".into(),
                    content: vec![Part::text("a.rs")],
                    is_error: false,
                }],
            ),
        ]
    }

    fn tools() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "Bash".into(),
            description: "Runs a command".into(),
            input_schema: json!({"type": "object"}),
        }]
    }

    #[test]
    fn anthropic_marks_system_and_two_newest_messages() {
        let system = vec!["You are Claude Code.".to_owned(), "Be brief.".to_owned()];
        let request = render_anthropic(
            "claude-sonnet-4-5",
            32_000,
            &system,
            &tools(),
            &conversation(),
        )
        .unwrap();
        let body: Value = serde_json::from_slice(&request.encode()).unwrap();
        let expected = json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 32000,
            "system": [
                {"type": "text", "text": "You are Claude Code."},
                {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}},
            ],
            "tools": [{"name": "Bash", "description": "Runs a command", "input_schema": {"type": "object"}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "list files"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "running ls"},
                    {"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "ls"},
                     "cache_control": {"type": "ephemeral"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "c1",
                     "content": [{"type": "text", "text": "a.rs"}],
                     "cache_control": {"type": "ephemeral"}},
                ]},
            ],
        });
        assert_eq!(body, expected);
    }

    #[test]
    fn anthropic_without_system_or_tools_omits_them() {
        let request =
            render_anthropic("claude-sonnet-4-5", 10, &[], &[], &conversation()[..1]).unwrap();
        let body: Value = serde_json::from_slice(&request.encode()).unwrap();
        assert_eq!(
            body,
            json!({"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [
                {"role": "user", "content": [{"type": "text", "text": "list files",
                 "cache_control": {"type": "ephemeral"}}]},
            ]})
        );
    }

    #[test]
    fn openai_puts_system_first_and_results_in_tool_messages() {
        let request = render_openai("gpt-4o", &["sys".to_owned()], &tools(), &conversation());
        let body: Value = serde_json::from_slice(&request.encode()).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "gpt-4o",
                "messages": [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "list files"},
                    {"role": "assistant", "content": "running ls", "tool_calls": [
                        {"id": "c1", "type": "function",
                         "function": {"name": "Bash", "arguments": "{\"command\":\"ls\"}"}}]},
                    {"role": "tool", "tool_call_id": "c1", "content": "a.rs"},
                ],
                "tools": [{"type": "function", "function": {"name": "Bash",
                    "description": "Runs a command", "parameters": {"type": "object"}}}],
            })
        );
    }
}
