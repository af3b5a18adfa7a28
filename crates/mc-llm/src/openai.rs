//! The OpenAI Chat Completions shape of a forced tool call: the body sent and the answer read.
//!
//! Also what Ollama, llama.cpp and LM Studio serve. `max_tokens` is sent (not
//! `max_completion_tokens`) because that is the name those local servers read.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::endpoint::EndpointLabel;
use crate::error::{LlmError, Result};
use crate::structured::{StructuredAnswer, StructuredRequest, ToolSpec, Usage};

#[derive(Serialize)]
pub(crate) struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    messages: [Message<'a>; 2],
    tools: [Tool<'a>; 1],
    tool_choice: ToolChoice<'a>,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Serialize)]
struct ToolChoice<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChosenFunction<'a>,
}

#[derive(Serialize)]
struct ChosenFunction<'a> {
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
        messages: [
            Message {
                role: "system",
                content: &request.system,
            },
            Message {
                role: "user",
                content: &request.user,
            },
        ],
        tools: [Tool {
            kind: "function",
            function: Function {
                name: tool.name,
                description: tool.description,
                parameters: tool.input_schema,
            },
        }],
        tool_choice: ToolChoice {
            kind: "function",
            function: ChosenFunction { name: tool.name },
        },
    }
}

#[derive(Deserialize)]
struct Answer {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<AnswerUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    tool_calls: Option<Vec<ToolCall>>,
}

#[derive(Deserialize)]
struct ToolCall {
    function: CalledFunction,
}

#[derive(Deserialize)]
struct CalledFunction {
    name: String,
    /// A JSON string per the spec; some local servers send the object itself.
    arguments: Value,
}

#[derive(Deserialize)]
struct AnswerUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

pub(crate) fn read_answer(
    bytes: &[u8],
    tool: &str,
    endpoint: &EndpointLabel,
) -> Result<StructuredAnswer> {
    let answer: Answer =
        serde_json::from_slice(bytes).map_err(|source| LlmError::MalformedAnswer {
            endpoint: endpoint.clone(),
            wire: "OpenAI Chat Completions",
            source,
        })?;
    let usage = answer.usage.map(to_usage).unwrap_or_default();
    let choice = answer.choices.into_iter().next();
    let stop_reason = choice.as_ref().and_then(|c| c.finish_reason.clone());
    let call = choice
        .and_then(|c| c.message.tool_calls)
        .and_then(|calls| calls.into_iter().find(|c| c.function.name == tool));
    let Some(call) = call else {
        return Err(LlmError::NoToolCall {
            endpoint: endpoint.clone(),
            tool: tool.to_owned(),
            stop_reason,
        });
    };
    let input = match call.function.arguments {
        Value::String(text) => {
            serde_json::from_str(&text).map_err(|source| LlmError::ArgumentsNotJson {
                endpoint: endpoint.clone(),
                tool: tool.to_owned(),
                source,
            })?
        }
        other => other,
    };
    Ok(StructuredAnswer {
        input,
        usage,
        answered_by: endpoint.clone(),
    })
}

fn to_usage(usage: AnswerUsage) -> Usage {
    let cached = usage
        .prompt_tokens_details
        .and_then(|d| d.cached_tokens)
        .unwrap_or(0);
    Usage {
        input_tokens: usage.prompt_tokens.saturating_sub(cached),
        output_tokens: usage.completion_tokens,
        cache_read: cached,
        cache_write: 0,
    }
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

    fn answer_with(arguments: Value) -> String {
        json!({
            "choices": [{
                "message": {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "t", "arguments": arguments}}
                ]},
                "finish_reason": "tool_calls",
            }],
            "usage": {"prompt_tokens": 10, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 6}},
        })
        .to_string()
    }

    #[test]
    fn body_forces_the_function() {
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
                "model": "m", "max_tokens": 100,
                "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}],
                "tools": [{"type": "function", "function": {"name": "t", "description": "d", "parameters": {"type": "object"}}}],
                "tool_choice": {"type": "function", "function": {"name": "t"}},
            })
        );
    }

    #[test]
    fn reads_string_arguments_and_splits_cached_tokens() {
        let bytes = answer_with(json!("{\"x\": 1}"));
        let answer = read_answer(bytes.as_bytes(), "t", &label()).unwrap();
        assert_eq!(
            answer,
            StructuredAnswer {
                input: json!({"x": 1}),
                usage: Usage {
                    input_tokens: 4,
                    output_tokens: 4,
                    cache_read: 6,
                    cache_write: 0
                },
                answered_by: label(),
            }
        );
    }

    #[test]
    fn accepts_object_arguments_from_lenient_servers() {
        let bytes = answer_with(json!({"x": 2}));
        let answer = read_answer(bytes.as_bytes(), "t", &label()).unwrap();
        assert_eq!(answer.input, json!({"x": 2}));
    }

    #[test]
    fn arguments_that_are_not_json_are_an_error() {
        let bytes = answer_with(json!("{\"x\": "));
        let error = read_answer(bytes.as_bytes(), "t", &label()).unwrap_err();
        assert!(
            matches!(error, LlmError::ArgumentsNotJson { .. }),
            "{error}"
        );
    }
}
