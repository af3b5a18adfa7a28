//! A host's config file held as a document `setup` can read and change one key at a time,
//! keeping everything else it holds: other keys, their order, and (for TOML) comments and
//! layout.
//!
//! Both syntaxes are edited in place on a concrete syntax tree, which leaves every byte it
//! was not asked to change: JSON (and JSONC, as OpenCode's `opencode.jsonc` allows) through
//! `jsonc-parser`'s CST, comments and trailing commas included; TOML through `toml_edit`.
//! A new key goes after its siblings, in the file's own indentation.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toml_edit::{DocumentMut, Item, Table, TableLike};

/// The syntax of a host's config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// JSON or JSONC (Claude Code, OpenCode, Pi).
    Json,
    /// TOML (Codex).
    Toml,
}

/// A parsed config file.
pub enum ConfigDoc {
    /// A JSON document whose value is an object, or empty.
    Json(CstRootNode),
    /// A TOML document.
    Toml(DocumentMut),
}

impl ConfigDoc {
    /// Parses `text` (empty for a file that does not exist yet).
    pub fn parse(format: Format, text: &str) -> Result<Self, String> {
        match format {
            Format::Json => {
                let root = CstRootNode::parse(text, &ParseOptions::default())
                    .map_err(|error| format!("is not valid JSON: {error}"))?;
                if root.value().is_some() && root.object_value().is_none() {
                    return Err("does not hold a JSON object".to_owned());
                }
                Ok(Self::Json(root))
            }
            Format::Toml => text
                .parse::<DocumentMut>()
                .map(Self::Toml)
                .map_err(|error| format!("is not valid TOML: {error}")),
        }
    }

    /// The value at `key`, as JSON.
    pub fn get(&self, key: &[String]) -> Option<Value> {
        let (leaf, parents) = key.split_last()?;
        match self {
            Self::Json(root) => json_object_at(root, parents)?
                .get(leaf)?
                .value()?
                .to_serde_value(),
            Self::Toml(doc) => {
                let mut table: &dyn TableLike = doc.as_table();
                for part in parents {
                    table = table.get(part)?.as_table_like()?;
                }
                table.get(leaf).and_then(toml_item_to_json)
            }
        }
    }

    /// How many of `key`'s parents exist, counted from the top: what `remove` may prune.
    pub fn existing_parents(&self, key: &[String]) -> usize {
        (1..key.len())
            .take_while(|depth| self.get(&key[..*depth]).is_some())
            .count()
    }

    /// Sets `key` to `value`, creating missing parents; fails when a parent is not an
    /// object/table (the file means something else there, and it is not ours to replace).
    pub fn set(&mut self, key: &[String], value: &Value) -> Result<(), String> {
        let Some((leaf, parents)) = key.split_last() else {
            return Err("empty key".to_owned());
        };
        match self {
            Self::Json(root) => {
                let mut object = root
                    .object_value_or_create()
                    .ok_or_else(|| "the file does not hold a JSON object".to_owned())?;
                for part in parents {
                    object = object
                        .object_value_or_create(part)
                        .ok_or_else(|| format!("`{part}` is not an object"))?;
                }
                match object.get(leaf) {
                    Some(prop) => prop.set_value(json_to_cst(value)),
                    None => {
                        object.append(leaf, json_to_cst(value));
                    }
                }
            }
            Self::Toml(doc) => {
                let mut table: &mut dyn TableLike = doc.as_table_mut();
                for part in parents {
                    if !table.contains_key(part) {
                        let mut fresh = Table::new();
                        fresh.set_implicit(true);
                        table.insert(part, Item::Table(fresh));
                    }
                    table = table
                        .get_mut(part)
                        .and_then(Item::as_table_like_mut)
                        .ok_or_else(|| format!("`{part}` is not a table"))?;
                }
                table.insert(leaf, Item::Value(json_to_toml(value)?));
            }
        }
        Ok(())
    }

    /// Removes `key`, then the `created_parents` deepest parents when that leaves them
    /// empty (they exist only because `set` made them).
    pub fn remove(&mut self, key: &[String], created_parents: usize) {
        let mut depth = key.len();
        let lowest_kept = key.len().saturating_sub(1 + created_parents);
        while depth > 0 {
            let removed = self.remove_one(&key[..depth], depth == key.len());
            depth -= 1;
            if !removed || depth <= lowest_kept {
                break;
            }
        }
    }

    /// Removes the entry at `key`: always when `force`, else only when it is an empty
    /// object/table. Returns whether it was removed.
    fn remove_one(&mut self, key: &[String], force: bool) -> bool {
        let Some((leaf, parents)) = key.split_last() else {
            return false;
        };
        match self {
            Self::Json(root) => {
                let Some(prop) = json_object_at(root, parents).and_then(|object| object.get(leaf))
                else {
                    return false;
                };
                let is_empty = prop
                    .object_value()
                    .is_some_and(|object| object.properties().is_empty());
                if force || is_empty {
                    prop.remove();
                }
                force || is_empty
            }
            Self::Toml(doc) => {
                let mut table: &mut dyn TableLike = doc.as_table_mut();
                for part in parents {
                    match table.get_mut(part).and_then(Item::as_table_like_mut) {
                        Some(next) => table = next,
                        None => return false,
                    }
                }
                let is_empty = table
                    .get(leaf)
                    .and_then(Item::as_table_like)
                    .is_some_and(TableLike::is_empty);
                (force || is_empty) && table.remove(leaf).is_some()
            }
        }
    }

    /// The document as text, ending with a newline.
    pub fn render(&self) -> Result<String, String> {
        match self {
            Self::Json(root) => {
                let mut text = root.to_string();
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                Ok(text)
            }
            Self::Toml(doc) => Ok(doc.to_string()),
        }
    }
}

/// The object at `parents` below the root, if every step is an object.
fn json_object_at(root: &CstRootNode, parents: &[String]) -> Option<CstObject> {
    let mut object = root.object_value()?;
    for part in parents {
        object = object.object_value(part)?;
    }
    Some(object)
}

fn json_to_cst(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(flag) => CstInputValue::Bool(*flag),
        Value::Number(number) => CstInputValue::Number(number.to_string()),
        Value::String(text) => CstInputValue::String(text.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(json_to_cst).collect()),
        Value::Object(map) => CstInputValue::Object(
            map.iter()
                .map(|(key, item)| (key.clone(), json_to_cst(item)))
                .collect(),
        ),
    }
}

fn json_to_toml(value: &Value) -> Result<toml_edit::Value, String> {
    Ok(match value {
        Value::String(text) => text.as_str().into(),
        Value::Bool(flag) => (*flag).into(),
        Value::Number(number) => match number.as_i64() {
            Some(int) => int.into(),
            None => number.as_f64().unwrap_or_default().into(),
        },
        Value::Array(items) => {
            let mut array = toml_edit::Array::new();
            for item in items {
                array.push(json_to_toml(item)?);
            }
            toml_edit::Value::Array(array)
        }
        Value::Object(map) => {
            let mut table = toml_edit::InlineTable::new();
            for (key, item) in map {
                table.insert(key, json_to_toml(item)?);
            }
            toml_edit::Value::InlineTable(table)
        }
        Value::Null => return Err("TOML has no null".to_owned()),
    })
}

fn toml_value_to_json(value: &toml_edit::Value) -> Value {
    match value {
        toml_edit::Value::String(text) => Value::from(text.value().as_str()),
        toml_edit::Value::Integer(int) => Value::from(*int.value()),
        toml_edit::Value::Float(float) => Value::from(*float.value()),
        toml_edit::Value::Boolean(flag) => Value::from(*flag.value()),
        toml_edit::Value::Datetime(when) => Value::from(when.value().to_string()),
        toml_edit::Value::Array(items) => items.iter().map(toml_value_to_json).collect(),
        toml_edit::Value::InlineTable(table) => table
            .iter()
            .map(|(key, item)| (key.to_owned(), toml_value_to_json(item)))
            .collect::<Map<_, _>>()
            .into(),
    }
}

fn toml_item_to_json(item: &Item) -> Option<Value> {
    match item {
        Item::None => None,
        Item::Value(value) => Some(toml_value_to_json(value)),
        Item::Table(table) => Some(
            table
                .iter()
                .filter_map(|(key, item)| Some((key.to_owned(), toml_item_to_json(item)?)))
                .collect::<Map<_, _>>()
                .into(),
        ),
        Item::ArrayOfTables(tables) => Some(
            tables
                .iter()
                .map(|table| toml_item_to_json(&Item::Table(table.clone())).unwrap_or_default())
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn key(path: &str) -> Vec<String> {
        path.split('.').map(str::to_owned).collect()
    }

    #[test]
    fn json_keys_are_set_and_removed_with_the_parents_set_made() {
        let text = "{\n\t\"b\": 1,\n\t\"a\": {\"x\": true}\n}\n";
        let mut doc = ConfigDoc::parse(Format::Json, text).unwrap();
        assert_eq!(doc.existing_parents(&key("a.y.z")), 1);
        doc.set(&key("a.y.z"), &json!("v")).unwrap();
        doc.set(&key("c"), &json!([1])).unwrap();
        assert_eq!(doc.get(&key("a.y.z")), Some(json!("v")));
        assert_eq!(
            doc.render().unwrap(),
            "{\n\t\"b\": 1,\n\t\"a\": {\n\t\t\"x\": true,\n\t\t\"y\": {\n\t\t\t\"z\": \"v\"\n\t\t}\n\t},\n\t\"c\": [1]\n}\n"
        );
        doc.remove(&key("a.y.z"), 1);
        doc.remove(&key("c"), 0);
        assert_eq!(
            doc.render().unwrap(),
            "{\n\t\"b\": 1,\n\t\"a\": {\n\t\t\"x\": true\n\t}\n}\n"
        );
        assert!(
            doc.set(&key("b.q"), &json!(1)).is_err(),
            "1 is not an object"
        );
    }

    #[test]
    fn jsonc_comments_and_layout_survive_an_edit_and_its_undo() {
        let text = "{\n  // the model\n  \"model\": \"x\", /* inline */\n  \"n\": [1, 2],\n}\n";
        let mut doc = ConfigDoc::parse(Format::Json, text).unwrap();
        doc.set(&key("mcp.mine"), &json!({"enabled": true}))
            .unwrap();
        let written = doc.render().unwrap();
        assert!(
            written.starts_with(
                "{\n  // the model\n  \"model\": \"x\", /* inline */\n  \"n\": [1, 2],\n"
            ),
            "{written}"
        );
        assert_eq!(doc.get(&key("mcp.mine.enabled")), Some(json!(true)));
        doc.remove(&key("mcp.mine"), 1);
        assert_eq!(doc.render().unwrap(), text);
    }

    #[test]
    fn toml_edits_keep_comments_and_prune_only_created_tables() {
        let text = "# top\nmodel = \"m\" # why\n\n[mcp_servers.other]\ncommand = \"o\"\n";
        let mut doc = ConfigDoc::parse(Format::Toml, text).unwrap();
        let command = key("mcp_servers.mine.command");
        assert_eq!(doc.existing_parents(&command), 1);
        doc.set(&command, &json!("/bin/mc")).unwrap();
        doc.set(&key("mcp_servers.mine.args"), &json!(["mcp"]))
            .unwrap();
        let written = doc.render().unwrap();
        assert!(written.starts_with(text), "{written}");
        assert!(
            written.ends_with("[mcp_servers.mine]\ncommand = \"/bin/mc\"\nargs = [\"mcp\"]\n"),
            "{written}"
        );
        assert_eq!(
            doc.get(&key("mcp_servers.other")),
            Some(json!({"command": "o"}))
        );
        doc.remove(&key("mcp_servers.mine.args"), 1);
        doc.remove(&command, 1);
        assert_eq!(doc.render().unwrap(), text);
    }

    #[test]
    fn unreadable_files_are_refused() {
        assert!(ConfigDoc::parse(Format::Json, "{\"a\": }").is_err());
        assert!(ConfigDoc::parse(Format::Json, "[1]").is_err());
        assert!(ConfigDoc::parse(Format::Toml, "a = ").is_err());
        assert!(
            ConfigDoc::parse(Format::Json, "").is_ok(),
            "a missing file starts empty"
        );
    }
}
