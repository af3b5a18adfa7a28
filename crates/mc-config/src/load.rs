//! Layering defaults < user file < project file into one checked config.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mc_core::config::Config;
use serde_json::{Map, Value};

use crate::diagnostic::{Diagnostic, Source};
use crate::error::FileError;
use crate::jsonc::{parse_jsonc, read_jsonc};
use crate::key_path::{KeyPath, leaves, set};
use crate::raw::RawConfig;
use crate::resolve::resolve;
use crate::screen::screen;
use crate::sources::ConfigSources;
use crate::user_only::without_user_only;

/// The effective configuration, where each value came from, and what was ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedConfig {
    /// The checked settings the engine runs with.
    pub config: Config,
    /// For every leaf key of [`LoadedConfig::config`] (`"pass.execute_threshold_percent"`),
    /// the layer that set it.
    pub provenance: BTreeMap<String, Source>,
    /// Skipped files and ignored keys, in the order they were found. Each one is a warning:
    /// the affected key falls back to the layer below, everything else applies.
    pub diagnostics: Vec<Diagnostic>,
}

impl LoadedConfig {
    /// The effective config in file shape, keys in declaration order.
    pub fn config_json(&self) -> Value {
        serde_json::to_value(&self.config).unwrap_or(Value::Null)
    }

    /// Every leaf of [`LoadedConfig::config_json`] with its value and source, in declaration
    /// order: what `magic-context config show` lists.
    pub fn entries(&self) -> Vec<(String, Value, Source)> {
        leaves(&self.config_json())
            .into_iter()
            .map(|(path, value)| {
                let key = path.to_string();
                let source = self
                    .provenance
                    .get(&key)
                    .cloned()
                    .unwrap_or(Source::Default);
                (key, value, source)
            })
            .collect()
    }
}

/// Loads the files named by `sources`. Never fails: a missing file is simply absent, and
/// every other problem becomes a diagnostic while the rest of the config still applies.
pub fn load(sources: &ConfigSources) -> LoadedConfig {
    load_over(sources, None)
}

/// What [`load`] would give with `file` (the user or the project file of `sources`)
/// holding `text` instead of what it holds, and the problems of `text`: it does not parse,
/// or a key of it is ignored (unknown, of the wrong type, out of range). For checking an
/// edit before it is written; nothing is read from `file` itself.
pub fn load_with_text(
    sources: &ConfigSources,
    file: &Path,
    text: &str,
) -> (LoadedConfig, Vec<Diagnostic>) {
    let loaded = match parse_jsonc(text) {
        Ok(document) => load_over(sources, Some((file, document))),
        Err(error) => {
            let problem = Diagnostic {
                file: Some(file.to_path_buf()),
                key: None,
                reason: error.to_string(),
            };
            return (load(sources), vec![problem]);
        }
    };
    let problems = loaded
        .diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.file.as_deref() == Some(file))
        .cloned()
        .collect();
    (loaded, problems)
}

/// [`load`], with `edited`'s document in place of its file's.
fn load_over(sources: &ConfigSources, edited: Option<(&Path, Map<String, Value>)>) -> LoadedConfig {
    let mut diagnostics = Vec::new();
    let mut layers = Vec::new();
    let layer = |path: &PathBuf, must_exist: Option<&'static str>, diagnostics: &mut Vec<_>| {
        match &edited {
            Some((file, document)) if *file == path.as_path() => Some(document.clone()),
            _ => read_layer(path, must_exist, diagnostics),
        }
    };
    if let Some(path) = &sources.user {
        let must_exist = sources.user_must_exist.then_some(ConfigSources::ENV_CONFIG);
        layers.extend(
            layer(path, must_exist, &mut diagnostics).map(|doc| (Source::User(path.clone()), doc)),
        );
    }
    if let Some(path) = &sources.project {
        layers.extend(
            layer(path, None, &mut diagnostics).map(|doc| (Source::Project(path.clone()), doc)),
        );
    }
    let mut loaded = load_layers(&layers);
    diagnostics.append(&mut loaded.diagnostics);
    loaded.diagnostics = diagnostics;
    loaded
}

/// Layers already-parsed documents, lowest first: each one's keys are screened, then
/// applied over the layers below it, key by key.
pub fn load_layers(layers: &[(Source, Map<String, Value>)]) -> LoadedConfig {
    let mut diagnostics = Vec::new();
    let mut merged = Map::new();
    let mut set_by: BTreeMap<KeyPath, Source> = BTreeMap::new();
    for (source, document) in layers {
        let file = source.file().map_or(Path::new(""), |path| path.as_path());
        let document = match source {
            Source::Project(_) => {
                let (kept, mut refused) = without_user_only(document, file);
                diagnostics.append(&mut refused);
                Cow::Owned(kept)
            }
            Source::Default | Source::User(_) => Cow::Borrowed(document),
        };
        let mut screened = screen(&document, file);
        diagnostics.append(&mut screened.diagnostics);
        for (path, value) in screened.accepted {
            if value.as_object().is_some_and(Map::is_empty) {
                continue; // `"pass": {}` sets nothing
            }
            set(&mut merged, &path, value);
            set_by.retain(|key, _| !path.contains(key) && !key.contains(&path));
            set_by.insert(path, source.clone());
        }
    }
    let raw = match serde_json::from_value::<RawConfig>(Value::Object(merged)) {
        Ok(raw) => raw,
        Err(err) => {
            // Unreachable while every key is screened alone and keys are independent; kept
            // so a future cross-key rule degrades to defaults instead of a crash.
            diagnostics.push(Diagnostic {
                file: None,
                key: None,
                reason: format!("the merged configuration did not load ({err}); using defaults"),
            });
            RawConfig::default()
        }
    };
    let (config, issues) = resolve(&raw);
    for issue in issues {
        let file = blamed(&set_by, &issue.key).and_then(Source::file).cloned();
        diagnostics.push(Diagnostic {
            file,
            key: Some(issue.key.to_string()),
            reason: issue.reason,
        });
    }
    // A leaf is credited to the layer that set it or a section above it (`"pass": null`
    // resets the section, and that file is where to look); otherwise it is a default.
    let config_json = serde_json::to_value(&config).unwrap_or(Value::Null);
    let provenance = leaves(&config_json)
        .into_iter()
        .map(|(path, _)| {
            let depth = path.segments().len();
            let source = (1..=depth)
                .rev()
                .find_map(|at| set_by.get(&path.prefix(at)));
            (path.to_string(), source.cloned().unwrap_or(Source::Default))
        })
        .collect();
    LoadedConfig {
        config,
        provenance,
        diagnostics,
    }
}

/// The layer to blame for a problem at `key` of the merged file: the one that set it or a
/// section above it, else (a key left unset, such as a workspace's missing `projects`) the
/// one that set a sibling of it.
fn blamed<'a>(set_by: &'a BTreeMap<KeyPath, Source>, key: &KeyPath) -> Option<&'a Source> {
    let depth = key.segments().len();
    (1..=depth)
        .rev()
        .find_map(|at| set_by.get(&key.prefix(at)))
        .or_else(|| {
            let parent = key.prefix(depth.saturating_sub(1));
            (depth >= 2)
                .then(|| set_by.iter().find(|(set, _)| parent.contains(set)))
                .flatten()
                .map(|(_, source)| source)
        })
}

fn read_layer(
    path: &Path,
    must_exist: Option<&'static str>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Map<String, Value>> {
    let error = match (read_jsonc(path), must_exist) {
        (Ok(Some(document)), _) => return Some(document),
        (Ok(None), None) => return None,
        (Ok(None), Some(env_var)) => FileError::Missing { env_var },
        (Err(err), _) => err,
    };
    diagnostics.push(Diagnostic {
        file: Some(path.to_path_buf()),
        key: None,
        reason: error.to_string(),
    });
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(dir: &Path) -> ConfigSources {
        ConfigSources {
            user: Some(dir.join("user.jsonc")),
            user_must_exist: false,
            project: Some(dir.join("project.jsonc")),
        }
    }

    #[test]
    fn an_edit_is_checked_against_the_other_file_without_reading_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let sources = sources(dir.path());
        std::fs::write(dir.path().join("user.jsonc"), "{ not json").unwrap();
        std::fs::write(
            dir.path().join("project.jsonc"),
            r#"{"pass": {"execute_threshold_percent": 70}}"#,
        )
        .unwrap();
        let user = dir.path().join("user.jsonc");
        let (loaded, problems) = load_with_text(
            &sources,
            &user,
            "// ours\n{\"pass\": {\"execute_threshold_percent\": 60, \"working_set_horizon_turns\": 12}}",
        );
        assert_eq!(problems, []);
        // The project file still wins where both set a key.
        assert_eq!(loaded.config.pass.execute_threshold_percent.get(), 70);
        assert!(matches!(
            loaded.provenance["pass.working_set_horizon_turns"],
            Source::User(_)
        ));
    }

    #[test]
    fn a_broken_or_ignored_edit_names_its_problems() {
        let dir = tempfile::tempdir().unwrap();
        let sources = sources(dir.path());
        let user = dir.path().join("user.jsonc");
        let (_, problems) = load_with_text(&sources, &user, "{\"pass\": ");
        assert_eq!(problems.len(), 1);
        assert!(problems[0].key.is_none());
        let (_, problems) = load_with_text(&sources, &user, r#"{"pass": {"nonsense": 1}}"#);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].file.as_deref(), Some(user.as_path()));
    }
}
