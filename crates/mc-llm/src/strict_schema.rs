//! A tool's input schema as OpenAI's strict structured outputs accept it, and the answer
//! read back in the tool's own terms.
//!
//! Strict mode guarantees the answer matches the schema, but accepts only a subset of JSON
//! Schema: every object must list all its properties as required and forbid others, and some
//! keywords (a string's `minLength`, `maxLength`) are refused outright. A tool schema written
//! once for every wire (the historian's `record_history`) is not in that subset, so it is
//! rewritten here: an optional property becomes required but may be `null`, and the nulls the
//! model sends for those are removed from the answer again, so the caller reads exactly what a
//! forced tool call on the other wires would have given. The keywords strict mode refuses are
//! left out; the caller validates the answer against its own rules anyway.

use serde_json::{Map, Value, json};

/// String keywords strict mode refuses.
const UNSUPPORTED: [&str; 2] = ["minLength", "maxLength"];

/// `schema` rewritten for strict mode (see the module docs).
pub(crate) fn strict_schema(schema: &Value) -> Value {
    let Value::Object(node) = schema else {
        return schema.clone();
    };
    let mut out = Map::with_capacity(node.len() + 2);
    for (key, value) in node {
        match key.as_str() {
            _ if UNSUPPORTED.contains(&key.as_str()) => {}
            "properties" | "required" | "additionalProperties" if is_object_node(node) => {}
            "items" => {
                out.insert(key.clone(), strict_schema(value));
            }
            "anyOf" | "oneOf" | "allOf" => {
                let branches = value.as_array().map_or_else(Vec::new, |branches| {
                    branches.iter().map(strict_schema).collect()
                });
                out.insert(key.clone(), Value::Array(branches));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if !out.contains_key("type") && is_string_enum(node) {
        out.insert("type".to_owned(), json!("string"));
    }
    if is_object_node(node) {
        let required = required_names(node);
        let mut properties = Map::new();
        if let Some(Value::Object(given)) = node.get("properties") {
            for (name, property) in given {
                let strict = strict_schema(property);
                let strict = if required.contains(&name.as_str()) {
                    strict
                } else {
                    json!({"anyOf": [strict, {"type": "null"}]})
                };
                properties.insert(name.clone(), strict);
            }
        }
        let all: Vec<Value> = properties.keys().map(|name| json!(name)).collect();
        out.insert("properties".to_owned(), Value::Object(properties));
        out.insert("required".to_owned(), Value::Array(all));
        out.insert("additionalProperties".to_owned(), json!(false));
    }
    Value::Object(out)
}

/// `answer` with the `null`s removed that [`strict_schema`] let the model send for the
/// optional properties of `schema` (the original schema, not the strict one).
pub(crate) fn drop_optional_nulls(answer: &mut Value, schema: &Value) {
    let Value::Object(node) = schema else {
        return;
    };
    match answer {
        Value::Object(fields) if is_object_node(node) => {
            let required = required_names(node);
            let Some(Value::Object(properties)) = node.get("properties") else {
                return;
            };
            fields.retain(|name, value| {
                !(value.is_null()
                    && properties.contains_key(name)
                    && !required.contains(&name.as_str()))
            });
            for (name, value) in fields.iter_mut() {
                if let Some(property) = properties.get(name) {
                    drop_optional_nulls(value, property);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = node.get("items") {
                for item in items {
                    drop_optional_nulls(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

fn is_object_node(node: &Map<String, Value>) -> bool {
    node.get("type").and_then(Value::as_str) == Some("object") || node.contains_key("properties")
}

fn is_string_enum(node: &Map<String, Value>) -> bool {
    node.get("enum")
        .and_then(Value::as_array)
        .is_some_and(|values| !values.is_empty() && values.iter().all(Value::is_string))
}

fn required_names(node: &Map<String, Value>) -> Vec<&str> {
    node.get("required")
        .and_then(Value::as_array)
        .map_or_else(Vec::new, |names| {
            names.iter().filter_map(Value::as_str).collect()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "required": ["items"],
            "properties": {
                "items": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["title"],
                        "properties": {
                            "title": {"type": "string", "minLength": 1},
                            "kind": {"enum": ["A", "B"]}
                        }
                    }
                },
                "notes": {"type": "array", "items": {"type": "string", "maxLength": 9}}
            }
        })
    }

    #[test]
    fn every_object_requires_all_its_properties_and_forbids_others() {
        assert_eq!(
            strict_schema(&schema()),
            json!({
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "properties": {
                                "title": {"type": "string"},
                                "kind": {"anyOf": [{"enum": ["A", "B"], "type": "string"}, {"type": "null"}]}
                            },
                            "required": ["title", "kind"],
                            "additionalProperties": false
                        }
                    },
                    "notes": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}
                },
                "required": ["items", "notes"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn nulls_of_optional_properties_are_removed_and_others_kept() {
        let mut answer = json!({
            "items": [{"title": "t", "kind": null}, {"title": null, "kind": "A"}],
            "notes": null,
            "extra": null
        });
        drop_optional_nulls(&mut answer, &schema());
        assert_eq!(
            answer,
            json!({
                "items": [{"title": "t"}, {"title": null, "kind": "A"}],
                "extra": null
            })
        );
    }
}
