//! What a Claude Code session file does not keep, stood in for.
//!
//! Session files record the conversation but neither the system prompt nor the tool
//! definitions sent with every request, and those are most of a short session's prompt
//! (about 15K tokens of the recorded capture's first request). Replaying without them would
//! understate every cost, so the loader substitutes:
//! - a system prompt for a command-line coding agent, written for this project in its own
//!   words, about 3K o200k tokens long (`system_prompt.md`);
//! - a definition for each tool the session's `tool_use` blocks name: a written stand-in
//!   for the tools such agents ship (`catalogue.rs`), and for any other name (MCP tools) a
//!   schema inferred from the inputs the session passed.
//!
//! Both are fixed per session, so the cache simulator still sees a stable prefix; their size
//! is an estimate and the recording says so in `stand_ins`.

mod catalogue;

use serde_json::{Map, Value, json};

use super::ToolSpec;

/// The stand-in system prompt.
pub(super) const SYSTEM_PROMPT: &str = include_str!("system_prompt.md");

/// What the recording says it substituted.
pub(super) const STAND_INS: [&str; 2] = ["system prompt", "tools"];

/// A tool a session called, with every input it passed.
#[derive(Debug)]
pub(super) struct SeenTool<'a> {
    pub(super) name: &'a str,
    pub(super) inputs: Vec<&'a Value>,
}

/// Stand-in definitions for the tools a session called: known names in the order a Claude
/// Code-like client lists them, then the others in the order the session first called them.
pub(super) fn tools(seen: &[SeenTool<'_>]) -> Vec<ToolSpec> {
    let known = catalogue::ORDER
        .iter()
        .filter(|name| seen.iter().any(|tool| tool.name == **name))
        .filter_map(|name| {
            let (description, schema) = catalogue::known_tool(name)?;
            Some(spec(name, description.to_owned(), schema))
        });
    let inferred = seen
        .iter()
        .filter(|tool| !catalogue::ORDER.contains(&tool.name))
        .map(|tool| {
            let description = format!(
                "Stand-in for the `{}` tool, whose definition the session file does not keep. \
                 Its input schema lists the arguments the session passed to it.",
                tool.name
            );
            spec(tool.name, description, inferred_schema(&tool.inputs))
        });
    known.chain(inferred).collect()
}

fn spec(name: &str, description: String, mut input_schema: Value) -> ToolSpec {
    if let Value::Object(map) = &mut input_schema {
        map.insert(
            "$schema".to_owned(),
            Value::from("http://json-schema.org/draft-07/schema#"),
        );
    }
    ToolSpec {
        name: name.to_owned(),
        description,
        input_schema,
    }
}

/// An object schema whose properties are the keys the inputs used, typed by the values
/// seen (untyped when they disagree), and required when every input had them.
fn inferred_schema(inputs: &[&Value]) -> Value {
    let mut properties: Map<String, Value> = Map::new();
    for input in inputs {
        let Value::Object(fields) = input else {
            continue;
        };
        for (key, value) in fields {
            let kind = json_type(value);
            match properties.get_mut(key) {
                None => {
                    properties.insert(key.clone(), json!({ "type": kind }));
                }
                Some(Value::Object(property)) => {
                    if property.get("type").and_then(Value::as_str) != Some(kind) {
                        property.remove("type");
                    }
                }
                Some(_) => {}
            }
        }
    }
    let required: Vec<String> = properties
        .keys()
        .filter(|key| inputs.iter().all(|input| input.get(key.as_str()).is_some()))
        .cloned()
        .collect();
    let required: Vec<&str> = required.iter().map(String::as_str).collect();
    catalogue::object(Value::Object(properties), &required)
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_i64() || number.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CountTokens, O200kCounter};

    #[test]
    fn system_prompt_is_about_3k_tokens() {
        let tokens = O200kCounter::load().unwrap().count_tokens(SYSTEM_PROMPT);
        assert!((2_700..=3_300).contains(&tokens), "{tokens} tokens");
    }

    #[test]
    fn known_tools_come_in_client_order_then_inferred_ones() {
        let bash = json!({"command": "ls"});
        let read = json!({"file_path": "/a"});
        let diag_1 = json!({"uri": "file:///a", "line": 3});
        let diag_2 = json!({"uri": "file:///b", "line": 3.5});
        let seen = [
            SeenTool {
                name: "mcp__ide__getDiagnostics",
                inputs: vec![&diag_1, &diag_2],
            },
            SeenTool {
                name: "Read",
                inputs: vec![&read],
            },
            SeenTool {
                name: "Bash",
                inputs: vec![&bash],
            },
        ];
        let tools = tools(&seen);
        let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
        assert_eq!(names, ["Bash", "Read", "mcp__ide__getDiagnostics"]);
        assert_eq!(tools[0].input_schema["required"], json!(["command"]));
        assert_eq!(
            tools[2].input_schema,
            json!({
                "type": "object",
                "properties": {"uri": {"type": "string"}, "line": {}},
                "required": ["uri", "line"],
                "additionalProperties": false,
                "$schema": "http://json-schema.org/draft-07/schema#"
            })
        );
        assert!(tools.iter().all(|tool| !tool.description.is_empty()));
    }

    #[test]
    fn every_catalogued_tool_has_a_definition() {
        for name in catalogue::ORDER {
            let (description, schema) = catalogue::known_tool(name).unwrap();
            assert!(description.len() > 20, "{name}");
            assert_eq!(schema["type"], "object", "{name}");
        }
    }
}
