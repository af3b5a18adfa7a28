//! The JSON Schema of the config file, generated from [`RawConfig`].
//!
//! Subschemas are inlined so editors show descriptions in place, and each property carries
//! its effective default taken from `mc_core::config::Config::default()`, so the schema can
//! never advertise a default the engine does not use.

use mc_core::config::Config;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use crate::raw::RawConfig;

/// The JSON Schema (draft 2020-12) for `magic-context.jsonc` files.
pub fn json_schema() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<RawConfig>().to_value();
    let defaults = serde_json::to_value(Config::default()).unwrap_or(Value::Null);
    add_defaults(&mut schema, &defaults);
    headline_first(schema)
}

/// Moves `$schema`, `title` and `description` to the top, where a reader looks first.
fn headline_first(schema: Value) -> Value {
    let Value::Object(mut rest) = schema else {
        return schema;
    };
    let mut ordered = Map::new();
    for key in ["$schema", "title", "description"] {
        if let Some(value) = rest.remove(key) {
            ordered.insert(key.to_owned(), value);
        }
    }
    ordered.extend(rest);
    Value::Object(ordered)
}

/// Walks `schema`'s `properties` alongside `defaults` and records each default.
fn add_defaults(schema: &mut Value, defaults: &Value) {
    let (Some(properties), Value::Object(defaults)) = (
        schema.get_mut("properties").and_then(Value::as_object_mut),
        defaults,
    ) else {
        return;
    };
    for (name, property) in properties.iter_mut() {
        let Some(default) = defaults.get(name) else {
            continue;
        };
        if default.is_object() && property.get("properties").is_some() {
            add_defaults(property, default);
        } else if let Value::Object(property) = property {
            insert_default(property, default.clone());
        }
    }
}

fn insert_default(property: &mut Map<String, Value>, default: Value) {
    property.insert("default".to_owned(), default);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_carries_descriptions_bounds_and_defaults() {
        let schema = json_schema();
        let threshold = &schema["properties"]["pass"]["properties"]["execute_threshold_percent"];
        assert_eq!(threshold["minimum"], 20);
        assert_eq!(threshold["maximum"], 90);
        assert_eq!(threshold["default"], 65);
        assert!(
            threshold["description"]
                .as_str()
                .unwrap()
                .contains("usable window")
        );
        assert_eq!(schema["properties"]["pass"]["additionalProperties"], false);
        assert_eq!(
            schema["properties"]["cache"]["properties"]["ttl"]["default"],
            "5m"
        );
        let top: Vec<&str> = schema
            .as_object()
            .unwrap()
            .keys()
            .take(3)
            .map(String::as_str)
            .collect();
        assert_eq!(top, ["$schema", "title", "description"]);
        assert_eq!(schema["title"], "Magic Context configuration");
    }
}
