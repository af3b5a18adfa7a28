//! Per-key leniency: splits one file into the keys that may apply and the ones to report.
//!
//! Every leaf of the file is tried on its own: an object holding only that path is
//! deserialized into [`RawConfig`] (catching wrong types and unknown keys with serde's own
//! rules) and then resolved (catching out-of-range values). A leaf that passes both is kept;
//! one that fails yields a [`Diagnostic`] and is dropped, so it falls back to the layer below
//! while its neighbours still apply. Checking the same rules the real load uses means the
//! screening can never disagree with it.

use std::path::Path;

use serde_json::{Map, Value};

use crate::diagnostic::Diagnostic;
use crate::key_path::{KeyPath, leaves};
use crate::raw::RawConfig;
use crate::resolve::resolve;
use crate::serde_reason::humanize;

/// The keys of one file that passed, and the problems with the rest.
#[derive(Debug, Default)]
pub struct Screened {
    /// Leaf paths with their values, in document order.
    pub accepted: Vec<(KeyPath, Value)>,
    /// One entry per rejected key (several bad leaves under one unknown section count once).
    pub diagnostics: Vec<Diagnostic>,
}

/// Sections taken whole or not at all, by their depth: a workspace with one bad key is left
/// out entirely, since falling back key by key could widen it (a mistyped category would
/// leave `categories` unset, which shares every category).
const WHOLE_SECTIONS: [(&str, usize); 1] = [("workspaces", 2)];

/// Screens the settings `document` read from `file`.
pub fn screen(document: &Map<String, Value>, file: &Path) -> Screened {
    let mut screened = Screened::default();
    let mut refused_sections: Vec<KeyPath> = Vec::new();
    for (path, value) in leaves(&Value::Object(document.clone())) {
        match first_problem(&path, &value) {
            None => screened.accepted.push((path, value)),
            Some((key, reason)) => {
                refused_sections.extend(whole_section(&key));
                let key = Some(key.to_string());
                if !screened.diagnostics.iter().any(|d| d.key == key) {
                    let file = Some(file.to_path_buf());
                    screened.diagnostics.push(Diagnostic { file, key, reason });
                }
            }
        }
    }
    screened.accepted.retain(|(path, _)| {
        !refused_sections
            .iter()
            .any(|section| section.contains(path))
    });
    screened
}

/// The whole section `key` lies in, when it lies in one.
fn whole_section(key: &KeyPath) -> Option<KeyPath> {
    WHOLE_SECTIONS.iter().find_map(|&(top, depth)| {
        let segments = key.segments();
        (segments.first().is_some_and(|first| first == top) && segments.len() >= depth)
            .then(|| key.prefix(depth))
    })
}

/// The shallowest problem on the way to the leaf at `path`: an unknown section is reported
/// once at its own name rather than once per key inside it.
fn first_problem(path: &KeyPath, value: &Value) -> Option<(KeyPath, String)> {
    let depth = path.segments().len();
    for at in 1..=depth {
        let prefix = path.prefix(at);
        let probe = if at == depth {
            value.clone()
        } else {
            Value::Object(Map::new())
        };
        match serde_json::from_value::<RawConfig>(prefix.nest(probe)) {
            Err(err) => return Some((prefix, humanize(&err.to_string()))),
            Ok(raw) if at == depth => {
                // Only a problem at this key, inside it or above it is this leaf's: alone in
                // its probe, `workspaces.shop.categories` leaves `projects` unset, which the
                // merged file (where the sibling is) decides on.
                let (_, issues) = resolve(&raw);
                return issues
                    .into_iter()
                    .find(|issue| issue.key.contains(path) || path.contains(&issue.key))
                    .map(|issue| (issue.key, issue.reason));
            }
            Ok(_) => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run(value: Value) -> Screened {
        let Value::Object(document) = value else {
            panic!("not an object")
        };
        screen(&document, Path::new("/f.jsonc"))
    }

    fn reasons(screened: &Screened) -> Vec<String> {
        screened
            .diagnostics
            .iter()
            .map(|d| format!("{}: {}", d.key.as_deref().unwrap_or("-"), d.reason))
            .collect()
    }

    #[test]
    fn each_bad_key_is_reported_and_its_neighbours_kept() {
        let screened = run(json!({
            "pass": {"execute_threshold_percent": "high", "refusal_percent": 97},
            "history": {"budget_percent": 80, "budget_tokens_unknown_window": 50000},
            "pas": {"a": 1, "b": 2},
            "cache": {"ttl": {}, "ttl_by_model": {"claude-opus-4": "1h"}},
        }));
        let kept: Vec<String> = screened
            .accepted
            .iter()
            .map(|(p, _)| p.to_string())
            .collect();
        assert_eq!(
            kept,
            [
                "pass.refusal_percent",
                "history.budget_tokens_unknown_window",
                "cache.ttl_by_model.claude-opus-4"
            ]
        );
        assert_eq!(
            reasons(&screened),
            [
                "pass.execute_threshold_percent: invalid type: string \"high\", expected a whole number, 0 or more",
                "history.budget_percent: must be between 1 and 50 percent, got 80",
                "pas: unknown key `pas` (did you mean `pass`?)",
                "cache.ttl: invalid type: object, expected a string",
            ]
        );
    }

    /// `compaction.enabled` takes a switch only; a word for it is reported, not guessed at.
    #[test]
    fn compaction_takes_a_boolean() {
        let screened = run(json!({"compaction": {"enabled": "no", "auto": false}}));
        assert!(screened.accepted.is_empty());
        assert_eq!(
            reasons(&screened),
            [
                "compaction.enabled: invalid type: string \"no\", expected a boolean",
                "compaction.auto: unknown key `auto`; expected one of `enabled`",
            ]
        );
    }

    #[test]
    fn nulls_and_empty_sections_pass() {
        let screened = run(json!({"$schema": "x", "pass": {}, "historian": {"model": null}}));
        assert!(screened.diagnostics.is_empty());
        assert_eq!(screened.accepted.len(), 3);
    }
}
