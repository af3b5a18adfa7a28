//! The Anthropic Messages shape of a forced tool call: the body sent and the answer read.
//!
//! Only the few fields this client needs are typed here; it never forwards a client's body,
//! so there is nothing to keep losslessly (that is `mc-wire`'s job for proxied traffic).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::endpoint::EndpointLabel;
use crate::error::{LlmError, Result};
use crate::structured::{StructuredAnswer, StructuredRequest, ToolSpec, Usage};

/// The `anthropic-version` header every call sends.
pub(crate) const VERSION: &str = "2023-06-01";

#[derive(Serialize)]
pub(crate) struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    system: &'a str,
    messages: [Message<'a>; 1],
    tools: [&'a ToolSpec<'a>; 1],
    tool_choice: ToolChoice<'a>,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct ToolChoice<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
}

pub(crate) fn body<'a>(
    model: &'a str,
    request: &'a StructuredRequest,
    tool: &'a ToolSpec<'a>,
) -> Body<'a> {
    Body {
        model,
        max_tokens: request.max_tokens,
        system: &request.system,
        messages: [Message {
            role: "user",
            content: &request.user,
        }],
        tools: [tool],
        tool_choice: ToolChoice {
            kind: "tool",
            name: tool.name,
        },
    }
}

#[derive(Deserialize)]
struct Answer {
    content: Vec<Block>,
    stop_reason: Option<String>,
    #[serde(default)]
    usage: AnswerUsage,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    ToolUse {
        name: String,
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default)]
struct AnswerUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

pub(crate) fn read_answer(
    bytes: &[u8],
    tool: &str,
    endpoint: &EndpointLabel,
) -> Result<StructuredAnswer> {
    let answer: Answer =
        serde_json::from_slice(bytes).map_err(|source| LlmError::MalformedAnswer {
            endpoint: endpoint.clone(),
            wire: "Anthropic Messages",
            source,
        })?;
    let input = answer.content.into_iter().find_map(|block| match block {
        Block::ToolUse { name, input } if name == tool => Some(input),
        Block::ToolUse { .. } | Block::Other => None,
    });
    let Some(input) = input else {
        return Err(LlmError::NoToolCall {
            endpoint: endpoint.clone(),
            tool: tool.to_owned(),
            stop_reason: answer.stop_reason,
        });
    };
    let usage = Usage {
        input_tokens: answer.usage.input_tokens,
        output_tokens: answer.usage.output_tokens,
        cache_read: answer.usage.cache_read_input_tokens.unwrap_or(0),
        cache_write: answer.usage.cache_creation_input_tokens.unwrap_or(0),
    };
    Ok(StructuredAnswer {
        input,
        usage,
        answered_by: endpoint.clone(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn label() -> EndpointLabel {
        EndpointLabel {
            model: "m".into(),
            host: "h".into(),
        }
    }

    #[test]
    fn body_forces_the_tool() {
        let request = StructuredRequest {
            system: "sys".into(),
            user: "hi".into(),
            tool: json!({"name": "t", "description": "d", "input_schema": {"type": "object"}}),
            max_tokens: 100,
        };
        let tool = ToolSpec::from_value(&request.tool).unwrap();
        let sent = serde_json::to_value(body("m", &request, &tool)).unwrap();
        assert_eq!(
            sent,
            json!({
                "model": "m", "max_tokens": 100, "system": "sys",
                "messages": [{"role": "user", "content": "hi"}],
                "tools": [{"name": "t", "description": "d", "input_schema": {"type": "object"}}],
                "tool_choice": {"type": "tool", "name": "t"},
            })
        );
    }

    #[test]
    fn reads_the_named_tool_use_and_usage() {
        let bytes = json!({
            "content": [
                {"type": "thinking", "thinking": "..."},
                {"type": "tool_use", "id": "1", "name": "other", "input": {"x": 0}},
                {"type": "tool_use", "id": "2", "name": "t", "input": {"x": 1}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 3, "cache_creation_input_tokens": 2},
        })
        .to_string();
        let answer = read_answer(bytes.as_bytes(), "t", &label()).unwrap();
        assert_eq!(
            answer,
            StructuredAnswer {
                input: json!({"x": 1}),
                usage: Usage {
                    input_tokens: 10,
                    output_tokens: 5,
                    cache_read: 3,
                    cache_write: 2
                },
                answered_by: label(),
            }
        );
    }

    #[test]
    fn text_only_answer_has_no_tool_call() {
        let bytes =
            json!({"content": [{"type": "text", "text": "sure"}], "stop_reason": "max_tokens"})
                .to_string();
        let error = read_answer(bytes.as_bytes(), "t", &label()).unwrap_err();
        assert!(
            matches!(&error, LlmError::NoToolCall { stop_reason: Some(r), .. } if r == "max_tokens"),
            "{error}"
        );
    }
}
