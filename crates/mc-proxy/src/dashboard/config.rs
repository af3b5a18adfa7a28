//! The dashboard's configuration view and editor: the effective values with where each came
//! from, what was ignored, and the user file (or a project's file) edited in place.
//!
//! An edit replaces the file's text with the text the operator wrote, comments and all, and
//! only after the configuration with it loads without a problem in that file: a typo, an
//! unknown key or a value out of range is refused with its reason and nothing is written.
//! The file is replaced whole at once (a temporary file renamed over it), so a crash never
//! leaves half of it. `serve` reads the user file when it starts: an edit applies from its
//! next start.

use std::path::{Path, PathBuf};

use mc_config::{ConfigSources, Diagnostic, LoadedConfig, load, load_with_text};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::DashboardError;

/// `?project=`: whose project file to show beside the user file.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ConfigQuery {
    /// A project the store knows the folder of.
    pub project: Option<String>,
}

/// One file of the configuration.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigFile {
    /// `user` or `project`.
    pub layer: &'static str,
    /// Where it is.
    pub path: String,
    /// Its text; empty when it does not exist yet.
    pub text: String,
    /// Whether it exists.
    pub exists: bool,
}

/// One effective setting.
#[derive(Debug, Clone, Serialize)]
pub struct Setting {
    /// Its key (`pass.execute_threshold_percent`).
    pub key: String,
    /// Its value.
    pub value: Value,
    /// `default`, or the file that set it.
    pub source: String,
}

/// One problem found in a file.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    /// The file, when the problem is one file's.
    pub file: Option<String>,
    /// The key, when the problem is one key's.
    pub key: Option<String>,
    /// What is wrong and what was done instead.
    pub reason: String,
}

/// The configuration as the files now say it.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigView {
    /// The project whose file is shown, when one is.
    pub project: Option<String>,
    /// The user file, then the project's.
    pub files: Vec<ConfigFile>,
    /// Every setting, in declaration order.
    pub settings: Vec<Setting>,
    /// What was ignored, and why.
    pub problems: Vec<Problem>,
}

/// `POST /api/config` `{"layer", "project"?, "text"}`.
#[derive(Debug, Clone, Deserialize)]
pub struct SaveConfig {
    /// `user` or `project`.
    pub layer: String,
    /// For `project`: the project whose file it is.
    #[serde(default)]
    pub project: Option<String>,
    /// The file's new text.
    pub text: String,
}

/// The files of `sources` and what they load to, for `project` (shown by name).
pub fn view(sources: &ConfigSources, project: Option<String>) -> ConfigView {
    let loaded = load(sources);
    let mut files = Vec::new();
    for (layer, path) in [("user", &sources.user), ("project", &sources.project)] {
        if let Some(path) = path {
            let text = std::fs::read_to_string(path).ok();
            files.push(ConfigFile {
                layer,
                path: path.display().to_string(),
                exists: text.is_some(),
                text: text.unwrap_or_default(),
            });
        }
    }
    ConfigView {
        project,
        files,
        settings: settings(&loaded),
        problems: loaded.diagnostics.iter().map(problem).collect(),
    }
}

/// Writes `text` as the `layer` file of `sources`, once it loads with no problem of its own;
/// otherwise says what is wrong and writes nothing.
pub fn save(sources: &ConfigSources, layer: &str, text: &str) -> Result<(), DashboardError> {
    let path = match layer {
        "user" => sources.user.as_ref(),
        "project" => sources.project.as_ref(),
        other => {
            return Err(DashboardError::BadRequest(format!(
                "layer must be `user` or `project`, not `{other}`"
            )));
        }
    }
    .ok_or_else(|| {
        DashboardError::BadRequest(format!(
            "there is no {layer} file here (no home directory, or no project folder)"
        ))
    })?;
    let (_, problems) = load_with_text(sources, path, text);
    if !problems.is_empty() {
        let reasons: Vec<String> = problems.iter().map(ToString::to_string).collect();
        return Err(DashboardError::BadRequest(format!(
            "not saved: {}",
            reasons.join("; ")
        )));
    }
    replace(path, text).map_err(|error| {
        DashboardError::Unavailable(format!("cannot write {}: {error}", path.display()))
    })
}

/// Replaces `path`'s content with `text` at once: a temporary file beside it, renamed over.
fn replace(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let temporary: PathBuf = dir.join(format!(
        ".{}.saving",
        path.file_name()
            .and_then(|name| name.to_str())
            .unwrap_or("config")
    ));
    std::fs::write(&temporary, text)?;
    std::fs::rename(&temporary, path)
}

fn settings(loaded: &LoadedConfig) -> Vec<Setting> {
    loaded
        .entries()
        .into_iter()
        .map(|(key, value, source)| Setting {
            key,
            value,
            source: source.to_string(),
        })
        .collect()
}

fn problem(diagnostic: &Diagnostic) -> Problem {
    Problem {
        file: diagnostic
            .file
            .as_ref()
            .map(|path| path.display().to_string()),
        key: diagnostic.key.clone(),
        reason: diagnostic.reason.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(dir: &Path) -> ConfigSources {
        ConfigSources {
            user: Some(dir.join("conf/magic-context.jsonc")),
            user_must_exist: false,
            project: None,
        }
    }

    #[test]
    fn a_good_edit_is_written_with_its_comments_and_shows_as_the_users() {
        let dir = tempfile::tempdir().unwrap();
        let sources = sources(dir.path());
        let text = "// tuned for small windows\n{\"pass\": {\"execute_threshold_percent\": 60}}\n";
        save(&sources, "user", text).unwrap();
        let path = dir.path().join("conf/magic-context.jsonc");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        let shown = view(&sources, None);
        assert!(shown.files[0].exists);
        let setting = shown
            .settings
            .iter()
            .find(|setting| setting.key == "pass.execute_threshold_percent")
            .unwrap();
        assert_eq!(setting.value, 60);
        assert_eq!(setting.source, path.display().to_string());
        assert!(shown.problems.is_empty());
    }

    #[test]
    fn a_bad_edit_is_refused_with_its_reason_and_the_file_is_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let sources = sources(dir.path());
        save(&sources, "user", "{}").unwrap();
        for bad in [
            "{\"pass\": ",
            "{\"pass\": {\"execute_threshold_percent\": 900}}",
            "{\"nonsense\": true}",
        ] {
            let refused = save(&sources, "user", bad).unwrap_err();
            assert!(
                matches!(refused, DashboardError::BadRequest(_)),
                "{refused}"
            );
            assert!(refused.to_string().starts_with("not saved: "), "{refused}");
        }
        let path = dir.path().join("conf/magic-context.jsonc");
        assert_eq!(std::fs::read_to_string(path).unwrap(), "{}");
        let no_project = save(&sources, "project", "{}").unwrap_err();
        assert!(
            no_project.to_string().contains("no project file"),
            "{no_project}"
        );
        let unknown = save(&sources, "team", "{}").unwrap_err();
        assert!(
            unknown.to_string().contains("`user` or `project`"),
            "{unknown}"
        );
    }
}
