//! One question, one forced tool call: what goes in and what comes back.

use serde::Serialize;
use serde_json::Value;

use crate::endpoint::EndpointLabel;
use crate::error::{LlmError, Result};

/// A request whose answer must be a call to `tool` (on Responses: JSON matching its schema).
///
/// The tool is given the way Anthropic's `tools` take it (`{name, description, input_schema}`),
/// so a schema built once (e.g. the historian's `record_history`) serves every wire.
#[derive(Debug, Clone, PartialEq)]
pub struct StructuredRequest {
    /// The system prompt.
    pub system: String,
    /// The single user message.
    pub user: String,
    /// `{name, description, input_schema}`; the model is forced to call it.
    pub tool: Value,
    /// The answer's output budget, in tokens. Structured answers are long; too small a budget
    /// cuts the call off and ends in [`LlmError::NoToolCall`] or [`LlmError::ArgumentsNotJson`].
    pub max_tokens: u32,
}

/// The forced call's input and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct StructuredAnswer {
    /// The tool call's input, as JSON; validating it is the caller's job.
    pub input: Value,
    /// Tokens the provider reported.
    pub usage: Usage,
    /// Which endpoint answered: after a fallback it is not the first, and usage is per model.
    pub answered_by: EndpointLabel,
}

/// Token counts of one answer, in the same sense on both wires.
///
/// `input_tokens` excludes cache reads and writes (Anthropic's meaning); OpenAI's
/// `prompt_tokens` includes its cached tokens, so those are subtracted to keep sums comparable.
/// Local servers often report nothing; then all counts are zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the provider's prompt cache (Anthropic only).
    pub cache_write: u64,
}

/// The request's tool, checked once before any attempt.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ToolSpec<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub input_schema: &'a Value,
}

impl<'a> ToolSpec<'a> {
    pub(crate) fn from_value(tool: &'a Value) -> Result<Self> {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or(LlmError::InvalidTool {
                reason: "`name` is missing, empty or not a string",
            })?;
        let description = match tool.get("description") {
            None => "",
            Some(d) => d.as_str().ok_or(LlmError::InvalidTool {
                reason: "`description` is not a string",
            })?,
        };
        let input_schema =
            tool.get("input_schema")
                .filter(|s| s.is_object())
                .ok_or(LlmError::InvalidTool {
                    reason: "`input_schema` is missing or not an object",
                })?;
        Ok(Self {
            name,
            description,
            input_schema,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tool_needs_name_and_object_schema() {
        let ok = json!({"name": "t", "input_schema": {"type": "object"}});
        assert_eq!(
            ToolSpec::from_value(&ok).map(|t| t.description).ok(),
            Some("")
        );
        for bad in [
            json!({"input_schema": {}}),
            json!({"name": "t"}),
            json!({"name": "t", "input_schema": "x"}),
            json!({"name": "t", "description": 3, "input_schema": {}}),
        ] {
            assert!(
                matches!(
                    ToolSpec::from_value(&bad),
                    Err(LlmError::InvalidTool { .. })
                ),
                "{bad}"
            );
        }
    }
}
