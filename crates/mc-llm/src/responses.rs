//! The OpenAI Responses shape of a structured answer: the body sent and the answer read.
//!
//! This wire has no forced tool call that every backend honours, but it has structured
//! outputs: `text.format` = `{type: "json_schema", name, schema, strict: true}` makes the
//! model's text the tool's input, as JSON matching the schema. The tool's name names the
//! format, so a server (the simulator, a gateway's log) sees what is asked for. `store` is
//! false: a background call has nothing to keep at the provider, and organisations with zero
//! data retention refuse anything else.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::endpoint::EndpointLabel;
use crate::error::{LlmError, Result};
use crate::strict_schema::{drop_optional_nulls, strict_schema};
use crate::structured::{StructuredAnswer, StructuredRequest, ToolSpec, Usage};

#[derive(Serialize)]
pub(crate) struct Body<'a> {
    model: &'a str,
    instructions: &'a str,
    input: [Message<'a>; 1],
    max_output_tokens: u32,
    store: bool,
    text: Text<'a>,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct Text<'a> {
    format: Format<'a>,
}

#[derive(Serialize)]
struct Format<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    description: &'a str,
    schema: Value,
    strict: bool,
}

pub(crate) fn body<'a>(
    model: &'a str,
    request: &'a StructuredRequest,
    tool: &'a ToolSpec<'a>,
) -> Body<'a> {
    Body {
        model,
        instructions: &request.system,
        input: [Message {
            role: "user",
            content: &request.user,
        }],
        max_output_tokens: request.max_tokens,
        store: false,
        text: Text {
            format: Format {
                kind: "json_schema",
                name: tool.name,
                description: tool.description,
                schema: strict_schema(tool.input_schema),
                strict: true,
            },
        },
    }
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    output: Vec<OutputItem>,
    #[serde(default)]
    usage: Option<AnswerUsage>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OutputItem {
    Message {
        #[serde(default)]
        content: Vec<ContentPart>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentPart {
    OutputText {
        text: String,
    },
    Refusal {
        refusal: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct AnswerUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// Reads the answer to a request whose format was `tool`: the output text of the message
/// items, joined, parsed as JSON.
pub(crate) fn read_answer(
    bytes: &[u8],
    tool: &ToolSpec<'_>,
    endpoint: &EndpointLabel,
) -> Result<StructuredAnswer> {
    let answer: Answer =
        serde_json::from_slice(bytes).map_err(|source| LlmError::MalformedAnswer {
            endpoint: endpoint.clone(),
            wire: "OpenAI Responses",
            source,
        })?;
    let usage = answer.usage.map(to_usage).unwrap_or_default();
    let mut text = String::new();
    let mut refusal = None;
    for item in answer.output {
        let OutputItem::Message { content } = item else {
            continue;
        };
        for part in content {
            match part {
                ContentPart::OutputText { text: part } => text.push_str(&part),
                ContentPart::Refusal { refusal: said } => refusal = Some(said),
                ContentPart::Other => {}
            }
        }
    }
    if text.trim().is_empty() {
        let incomplete = answer.incomplete_details.and_then(|details| details.reason);
        return Err(LlmError::NoStructuredOutput {
            endpoint: endpoint.clone(),
            format: tool.name.to_owned(),
            reason: refusal
                .map(|said| format!("refused: {said}"))
                .or(incomplete)
                .or(answer.status),
        });
    }
    let mut input: Value =
        serde_json::from_str(&text).map_err(|source| LlmError::OutputNotJson {
            endpoint: endpoint.clone(),
            format: tool.name.to_owned(),
            source,
        })?;
    drop_optional_nulls(&mut input, tool.input_schema);
    Ok(StructuredAnswer {
        input,
        usage,
        answered_by: endpoint.clone(),
    })
}

/// `input_tokens` includes the cached ones on this wire; they are split off to keep the
/// Anthropic meaning [`Usage`] documents.
fn to_usage(usage: AnswerUsage) -> Usage {
    let cached = usage
        .input_tokens_details
        .and_then(|details| details.cached_tokens)
        .unwrap_or(0);
    Usage {
        input_tokens: usage.input_tokens.saturating_sub(cached),
        output_tokens: usage.output_tokens,
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

    fn request() -> StructuredRequest {
        StructuredRequest {
            system: "sys".into(),
            user: "hi".into(),
            tool: json!({"name": "t", "description": "d", "input_schema": {
                "type": "object", "required": ["x"],
                "properties": {"x": {"type": "integer"}, "note": {"type": "string"}}
            }}),
            max_tokens: 100,
        }
    }

    fn answer_with(output: Value) -> String {
        json!({
            "id": "resp_1", "object": "response", "status": "completed",
            "output": output,
            "usage": {"input_tokens": 10, "output_tokens": 4, "input_tokens_details": {"cached_tokens": 6}},
        })
        .to_string()
    }

    #[test]
    fn body_enforces_the_schema_as_a_strict_text_format() {
        let request = request();
        let tool = ToolSpec::from_value(&request.tool).unwrap();
        let sent = serde_json::to_value(body("m", &request, &tool)).unwrap();
        assert_eq!(
            sent,
            json!({
                "model": "m",
                "instructions": "sys",
                "input": [{"role": "user", "content": "hi"}],
                "max_output_tokens": 100,
                "store": false,
                "text": {"format": {
                    "type": "json_schema", "name": "t", "description": "d",
                    "schema": {
                        "type": "object",
                        "properties": {
                            "x": {"type": "integer"},
                            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}
                        },
                        "required": ["x", "note"],
                        "additionalProperties": false
                    },
                    "strict": true
                }},
            })
        );
    }

    #[test]
    fn reads_the_output_text_past_reasoning_and_splits_cached_tokens() {
        let request = request();
        let tool = ToolSpec::from_value(&request.tool).unwrap();
        let bytes = answer_with(json!([
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "{\"x\": 1, ", "annotations": []},
                {"type": "output_text", "text": "\"note\": null}", "annotations": []}
            ]}
        ]));
        let answer = read_answer(bytes.as_bytes(), &tool, &label()).unwrap();
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
    fn a_refusal_or_a_cut_answer_says_why_there_is_no_output() {
        let request = request();
        let tool = ToolSpec::from_value(&request.tool).unwrap();
        let refused = answer_with(json!([{"type": "message", "role": "assistant", "content": [
            {"type": "refusal", "refusal": "I can't help with that."}
        ]}]));
        let error = read_answer(refused.as_bytes(), &tool, &label()).unwrap_err();
        assert!(
            matches!(&error, LlmError::NoStructuredOutput { reason: Some(r), .. } if r == "refused: I can't help with that."),
            "{error}"
        );
        let cut = json!({
            "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
            "output": [{"type": "reasoning", "id": "rs_1", "summary": []}],
        })
        .to_string();
        let error = read_answer(cut.as_bytes(), &tool, &label()).unwrap_err();
        assert!(
            matches!(&error, LlmError::NoStructuredOutput { reason: Some(r), .. } if r == "max_output_tokens"),
            "{error}"
        );
    }

    #[test]
    fn output_text_that_is_not_json_is_an_error() {
        let request = request();
        let tool = ToolSpec::from_value(&request.tool).unwrap();
        let bytes = answer_with(json!([{"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "{\"x\": "}
        ]}]));
        let error = read_answer(bytes.as_bytes(), &tool, &label()).unwrap_err();
        assert!(matches!(error, LlmError::OutputNotJson { .. }), "{error}");
    }
}
