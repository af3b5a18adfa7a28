//! `magic-context config`: the config file schema, and the effective config with sources.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::output::{pretty, write_stdout};
use anyhow::Context;
use clap::{Args, Subcommand};
use mc_config::{ConfigSources, Diagnostic, LoadedConfig, find_project_root, json_schema, load};
use serde_json::{Map, Value, json};

/// `magic-context config ...`
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the JSON Schema of magic-context.jsonc files (for editor completion and checks).
    Schema,
    /// Print the effective configuration and where each value came from.
    ///
    /// Layers, lowest first: built-in defaults; the user file ($MAGIC_CONTEXT_CONFIG, else
    /// $XDG_CONFIG_HOME/magic-context/magic-context.jsonc, else
    /// ~/.config/magic-context/magic-context.jsonc); the project file
    /// (.magic-context.jsonc in the project root). Ignored values are reported as warnings on
    /// stderr.
    Show(ShowArgs),
}

/// Arguments of `config show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Print one JSON object: {"config", "sources", "diagnostics", "files"}.
    #[arg(long)]
    pub json: bool,

    /// Project root whose .magic-context.jsonc applies [default: the git root of the current
    /// directory, else the current directory].
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

/// Runs a `config` subcommand.
pub fn run(command: ConfigCommand) -> anyhow::Result<ExitCode> {
    match command {
        ConfigCommand::Schema => write_stdout(&pretty(&json_schema())?)?,
        ConfigCommand::Show(args) => show(&args)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn show(args: &ShowArgs) -> anyhow::Result<()> {
    let project_root = match &args.project {
        Some(dir) => dir.clone(),
        None => {
            let cwd = std::env::current_dir().context("cannot read the current directory")?;
            find_project_root(&cwd)
        }
    };
    let sources = ConfigSources::discover(Some(&project_root));
    tracing::debug!(user = ?sources.user, project = ?sources.project, "config files");
    let loaded = load(&sources);
    if args.json {
        return write_stdout(&pretty(&show_json(&sources, &loaded))?);
    }
    write_stdout(&show_text(&sources, &loaded))?;
    let mut stderr = io::stderr().lock();
    for diagnostic in &loaded.diagnostics {
        writeln!(stderr, "warning: {diagnostic}")?;
    }
    Ok(())
}

/// `# user file: ...` headers, then one `key = value   (source)` line per setting, the
/// sources aligned so a non-default value stands out.
fn show_text(sources: &ConfigSources, loaded: &LoadedConfig) -> String {
    let mut out = String::new();
    for (label, path) in [
        ("user file:   ", &sources.user),
        ("project file:", &sources.project),
    ] {
        let line = match path {
            Some(path) if path.is_file() => format!("# {label} {}\n", path.display()),
            Some(path) => format!("# {label} {} (not found)\n", path.display()),
            None => format!("# {label} none (no HOME or XDG_CONFIG_HOME)\n"),
        };
        out.push_str(&line);
    }
    let entries = loaded.entries();
    let assignments: Vec<String> = entries
        .iter()
        .map(|(key, value, _)| format!("{key} = {value}"))
        .collect();
    let width = assignments
        .iter()
        .map(|a| a.chars().count())
        .max()
        .unwrap_or(0)
        .min(64);
    for (assignment, (_, _, source)) in assignments.iter().zip(&entries) {
        out.push_str(&format!("{assignment:<width$}   ({source})\n"));
    }
    out
}

/// The `--json` document: `config` in file shape, `sources` per key (`"default"` or the
/// file's path), `diagnostics`, and the `files` that were considered.
fn show_json(sources: &ConfigSources, loaded: &LoadedConfig) -> Value {
    let key_sources: Map<String, Value> = loaded
        .entries()
        .into_iter()
        .map(|(key, _, source)| (key, Value::String(source.to_string())))
        .collect();
    let diagnostics: Vec<Value> = loaded.diagnostics.iter().map(diagnostic_json).collect();
    json!({
        "config": loaded.config_json(),
        "sources": key_sources,
        "diagnostics": diagnostics,
        "files": {
            "user": sources.user.as_deref().map(path_text),
            "project": sources.project.as_deref().map(path_text),
        },
    })
}

fn diagnostic_json(diagnostic: &Diagnostic) -> Value {
    json!({
        "file": diagnostic.file.as_deref().map(path_text),
        "key": diagnostic.key,
        "reason": diagnostic.reason,
    })
}

fn path_text(path: &Path) -> String {
    path.display().to_string()
}

#[cfg(test)]
mod tests {
    use mc_config::{Source, load_layers};
    use serde_json::json;

    use super::*;

    #[test]
    fn text_lines_name_their_source() {
        let user = PathBuf::from("/u/magic-context.jsonc");
        let Value::Object(document) = json!({"pass": {"execute_threshold_percent": 70}}) else {
            panic!("object")
        };
        let loaded = load_layers(&[(Source::User(user.clone()), document)]);
        let sources = ConfigSources {
            user: Some(user),
            ..ConfigSources::default()
        };
        let text = show_text(&sources, &loaded);
        let line = text
            .lines()
            .find(|l| l.starts_with("pass.execute_threshold_percent"))
            .unwrap();
        assert!(
            line.starts_with("pass.execute_threshold_percent = 70 "),
            "{line}"
        );
        assert!(line.ends_with("   (/u/magic-context.jsonc)"), "{line}");
        assert!(
            text.starts_with("# user file:    /u/magic-context.jsonc (not found)\n"),
            "{text}"
        );
        assert!(text.contains("\ncache.ttl = \"5m\" "), "{text}");
    }
}
