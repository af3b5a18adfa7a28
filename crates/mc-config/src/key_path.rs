//! Dotted key paths (`pass.execute_threshold_percent`) and the JSON tree operations the
//! loader needs on them.
//!
//! Provenance, diagnostics and the per-key screening all speak in leaf paths, so a value's
//! origin and its problems are reported under the same name the user typed.

use std::fmt;

use serde_json::{Map, Value};

/// A path of object keys from the config root to one value.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyPath(Vec<String>);

impl KeyPath {
    /// The path of `segments`, outermost first.
    pub fn new<S: Into<String>>(segments: impl IntoIterator<Item = S>) -> Self {
        Self(segments.into_iter().map(Into::into).collect())
    }

    /// This path extended by one key.
    pub fn child(&self, segment: impl Into<String>) -> Self {
        let mut segments = self.0.clone();
        segments.push(segment.into());
        Self(segments)
    }

    /// The keys, outermost first.
    pub fn segments(&self) -> &[String] {
        &self.0
    }

    /// The first `depth` keys.
    pub fn prefix(&self, depth: usize) -> Self {
        Self(self.0.iter().take(depth).cloned().collect())
    }

    /// Whether `self` is `other` or lies above it (a section containing it).
    pub fn contains(&self, other: &Self) -> bool {
        other.0.starts_with(&self.0)
    }

    /// Wraps `value` in one object per key: `a.b` and `1` give `{"a": {"b": 1}}`.
    pub fn nest(&self, value: Value) -> Value {
        self.0.iter().rev().fold(value, |inner, key| {
            let mut object = Map::new();
            object.insert(key.clone(), inner);
            Value::Object(object)
        })
    }
}

impl fmt::Display for KeyPath {
    /// Keys joined by `.`; a key that is not a plain word (a model id such as `gpt-4.1`)
    /// is written as a JSON string so the path stays unambiguous.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, segment) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str(".")?;
            }
            let plain = !segment.is_empty()
                && segment
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-$".contains(c));
            if plain {
                f.write_str(segment)?;
            } else {
                write!(f, "{}", Value::String(segment.clone()))?;
            }
        }
        Ok(())
    }
}

/// Every leaf of `value` with its path, in document order.
///
/// A leaf is any non-object value, or an empty object below the root (kept so that
/// `"ttl": {}` is still type-checked).
pub fn leaves(value: &Value) -> Vec<(KeyPath, Value)> {
    let mut out = Vec::new();
    collect_leaves(&KeyPath::default(), value, &mut out);
    out
}

fn collect_leaves(path: &KeyPath, value: &Value, out: &mut Vec<(KeyPath, Value)>) {
    match value {
        Value::Object(object) if !object.is_empty() || path.0.is_empty() => {
            for (key, child) in object {
                collect_leaves(&path.child(key.clone()), child, out);
            }
        }
        _ => out.push((path.clone(), value.clone())),
    }
}

/// Sets the value at `path` inside `root`, creating (or replacing non-object values with)
/// the objects on the way.
pub fn set(root: &mut Map<String, Value>, path: &KeyPath, value: Value) {
    let Some((last, parents)) = path.0.split_last() else {
        return;
    };
    let mut object = root;
    for key in parents {
        let slot = object
            .entry(key.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        let Value::Object(inner) = slot else {
            return;
        };
        object = inner;
    }
    object.insert(last.clone(), value);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn display_quotes_keys_that_are_not_words() {
        let path = KeyPath::new(["cache", "ttl_by_model", "gpt-4.1"]);
        assert_eq!(path.to_string(), r#"cache.ttl_by_model."gpt-4.1""#);
        assert_eq!(KeyPath::new(["$schema"]).to_string(), "$schema");
    }

    #[test]
    fn leaves_in_document_order() {
        let value = json!({"b": {"x": 1, "y": [1, 2]}, "a": {}, "c": {"d": {}}});
        let found: Vec<String> = leaves(&value).iter().map(|(p, _)| p.to_string()).collect();
        assert_eq!(found, ["b.x", "b.y", "a", "c.d"]);
        assert!(leaves(&json!({})).is_empty());
    }

    #[test]
    fn nest_and_set_build_the_same_tree() {
        let path = KeyPath::new(["pass", "execute_threshold_percent"]);
        let nested = path.nest(json!(70));
        let mut root = Map::new();
        root.insert("pass".to_owned(), Value::Null);
        set(&mut root, &path, json!(70));
        assert_eq!(Value::Object(root), nested);
        assert!(KeyPath::new(["pass"]).contains(&path));
        assert!(!path.contains(&KeyPath::new(["pass"])));
    }
}
