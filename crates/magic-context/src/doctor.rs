//! `magic-context doctor`: creates the store on first use and reports whether it and the
//! configuration are healthy.
//!
//! The store check includes walking every session's hash chain: the raw log is the one thing
//! that must survive a crash whole, and a link that does not follow names the first bad row.
//!
//! This is the first command a new user runs, so each check says what it found and, when
//! something is wrong, what to do. The exit code is non-zero when the store is unusable,
//! because the proxy refuses managed requests in that state (DESIGN §7). Hosts configured
//! by `setup` are checked too ([`crate::doctor_hosts`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use mc_config::{ConfigSources, find_project_root, load};
use mc_store::{
    ChainReport, LocationEnv, Platform, SCHEMA_VERSION, Store, StoreOptions, resolve_data_dir,
};
use serde_json::{Value, json};

use crate::doctor_hosts::{check_hosts, render_hosts};
use crate::output::{pretty, write_stdout};
use crate::team_report::{team_line, team_report};
use crate::workspace_members::identify_members;

/// Arguments of `doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print one JSON object: {"ok", "store", "chains", "config", "hosts"}.
    #[arg(long)]
    pub json: bool,

    /// Project root whose .magic-context.jsonc is checked [default: the git root of the
    /// current directory, else the current directory].
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

/// Runs the checks and prints the report.
pub fn run(args: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let (store, chains) = check_store();
    let config = check_config(args.project.as_deref())?;
    let hosts = match resolve_data_dir(&LocationEnv::from_process(), Platform::current()) {
        Ok(location) => check_hosts(&location.dir),
        Err(_) => Vec::new(), // the store check already says why there is no data directory
    };
    let ok = store["ok"] == Value::Bool(true) && chains["ok"] == Value::Bool(true);
    // An unreachable team store does not make the proxy unhealthy: it serves from the
    // local cache and queues writes. It is reported, never counted against `ok`.
    let team = check_team_store();
    let report = json!({
        "ok": ok, "store": store, "chains": chains, "config": config, "hosts": hosts,
        "team_store": team,
    });
    if args.json {
        write_stdout(&pretty(&report)?)?;
    } else {
        write_stdout(&render_text(&report))?;
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The team store's report (`null` when none is configured or the store cannot be read).
fn check_team_store() -> Value {
    // `team_store` is read from the user file only, so no project file matters here.
    let config = load(&ConfigSources::discover(None)).config;
    let Ok(location) = resolve_data_dir(&LocationEnv::from_process(), Platform::current()) else {
        return Value::Null;
    };
    match Store::open_location(&location, StoreOptions::default()) {
        Ok(store) => team_report(&config, &store).unwrap_or(Value::Null),
        Err(_) => Value::Null,
    }
}

/// The store's summary, and the verification of every session's hash chain (`null` when the
/// store could not be read, which the store's own entry already reports).
fn check_store() -> (Value, Value) {
    let location = match resolve_data_dir(&LocationEnv::from_process(), Platform::current()) {
        Ok(location) => location,
        Err(error) => {
            return (
                json!({"ok": false, "error": error_chain(&error)}),
                Value::Null,
            );
        }
    };
    let path = location.db_path();
    let opened = Store::open_location(&location, StoreOptions::default()).and_then(|store| {
        // One snapshot for both, so the counts and the verified chains describe the same log.
        store.read(|tx| Ok((tx.health()?, tx.verify_chains()?)))
    });
    match opened {
        Ok((health, chains)) => (
            json!({
                "ok": true,
                "path": path.display().to_string(),
                "schema_version": health.schema_version,
                "supported_schema_version": SCHEMA_VERSION,
                "sqlite_version": health.sqlite_version,
                "journal_mode": health.journal_mode,
                "sessions": health.sessions,
                "messages": health.messages,
                "dir_mode": mode_of(&location.dir),
                "file_mode": mode_of(&path),
                "warnings": exposure_warnings(&location.dir, &path),
            }),
            chains_json(&chains),
        ),
        Err(error) => (
            json!({"ok": false, "path": path.display().to_string(), "error": error_chain(&error)}),
            Value::Null,
        ),
    }
}

fn chains_json(report: &ChainReport) -> Value {
    let broken: Vec<Value> = report
        .broken
        .iter()
        .map(|broken| {
            json!({
                "session": broken.session,
                "ordinal": broken.ordinal,
                "problem": broken.problem.to_string(),
            })
        })
        .collect();
    json!({
        "ok": report.is_intact(),
        "sessions_checked": report.sessions_checked,
        "messages_checked": report.messages_checked,
        "broken": broken,
    })
}

fn check_config(project: Option<&Path>) -> anyhow::Result<Value> {
    let root = match project {
        Some(dir) => dir.to_path_buf(),
        None => find_project_root(
            &std::env::current_dir().context("cannot read the current directory")?,
        ),
    };
    let sources = ConfigSources::discover(Some(&root));
    let loaded = load(&sources);
    let mut problems: Vec<String> = loaded.diagnostics.iter().map(ToString::to_string).collect();
    // A workspace root that names no project is valid config that shares nothing: said here
    // so the user learns it without reading the proxy's log.
    let (_, unknown) = identify_members(&loaded.config);
    problems.extend(unknown.iter().map(ToString::to_string));
    let file = |path: &Option<PathBuf>| match path {
        Some(path) if path.is_file() => Value::from(path.display().to_string()),
        _ => Value::Null,
    };
    Ok(json!({
        "ok": problems.is_empty(),
        "user_file": file(&sources.user),
        "project_file": file(&sources.project),
        "problems": problems,
    }))
}

/// The error and its causes on one line, so nothing the store said is hidden.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}

#[cfg(unix)]
fn mode_of(path: &Path) -> Value {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(path) {
        Ok(metadata) => Value::from(format!("{:04o}", metadata.permissions().mode() & 0o7777)),
        Err(_) => Value::Null,
    }
}

#[cfg(not(unix))]
fn mode_of(_path: &Path) -> Value {
    Value::Null
}

/// What other users of the machine can read or enter: the store holds whole conversations
/// (and whatever a user pasted into them), so anything beyond the owner is said, with the
/// command that closes it. A directory the user chose keeps the mode they gave it; this is
/// where they learn it is open.
#[cfg(unix)]
fn exposure_warnings(dir: &Path, file: &Path) -> Value {
    use std::os::unix::fs::PermissionsExt;
    let mut warnings = Vec::new();
    for (what, path, private) in [("directory", dir, "700"), ("file", file, "600")] {
        let Ok(metadata) = std::fs::metadata(path) else {
            continue;
        };
        let mode = metadata.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            warnings.push(Value::from(format!(
                "the data {what} {} is open to other users (mode {mode:04o}); it holds whole                  conversations: `chmod {private} {}`",
                path.display(),
                path.display()
            )));
        }
    }
    Value::Array(warnings)
}

#[cfg(not(unix))]
fn exposure_warnings(_dir: &Path, _file: &Path) -> Value {
    Value::Array(Vec::new())
}

fn render_text(report: &Value) -> String {
    let store = &report["store"];
    let config = &report["config"];
    let mut out = String::new();
    if store["ok"] == Value::Bool(true) {
        out.push_str(&format!(
            "store   ok    {} (schema v{}, SQLite {}, {} journal, dir {}, file {}; {} sessions, {} messages)\n",
            text(&store["path"]),
            store["schema_version"],
            text(&store["sqlite_version"]),
            text(&store["journal_mode"]),
            text(&store["dir_mode"]),
            text(&store["file_mode"]),
            store["sessions"],
            store["messages"],
        ));
        for warning in store["warnings"].as_array().into_iter().flatten() {
            out.push_str(&format!("store   WARN  {}\n", text(warning)));
        }
    } else {
        out.push_str(&format!("store   FAIL  {}\n", text(&store["error"])));
    }
    out.push_str(&render_chains(&report["chains"]));
    for (label, key) in [("user file", "user_file"), ("project file", "project_file")] {
        let path = match &config[key] {
            Value::String(path) => path.as_str(),
            _ => "none",
        };
        out.push_str(&format!("config  {label}: {path}\n"));
    }
    match config["problems"].as_array() {
        Some(problems) if !problems.is_empty() => {
            for problem in problems {
                out.push_str(&format!("config  WARN  {}\n", text(problem)));
            }
            out.push_str("        (each ignored value falls back to its default; see `magic-context config show`)\n");
        }
        _ => out.push_str("config  ok    no problems\n"),
    }
    if let Some(hosts) = report["hosts"].as_array() {
        out.push_str(&render_hosts(hosts));
    }
    let team = &report["team_store"];
    if !team.is_null() {
        let verdict = if team["reachable"] == Value::Bool(true) {
            "ok  "
        } else {
            "WARN"
        };
        let now_ms = crate::clock::now_ms().unwrap_or_default();
        out.push_str(&format!("team    {verdict}  {}", team_line(team, now_ms)));
    }
    out
}

/// One line when every chain verifies, else one per broken session, with what to do.
fn render_chains(chains: &Value) -> String {
    let Some(broken) = chains["broken"].as_array() else {
        return String::new(); // the store could not be read; its line says why
    };
    if broken.is_empty() {
        return format!(
            "chains  ok    {} sessions, {} messages verified\n",
            chains["sessions_checked"], chains["messages_checked"]
        );
    }
    let mut out = String::new();
    for session in broken {
        out.push_str(&format!(
            "chains  FAIL  session `{}` breaks at message {}: {}\n",
            text(&session["session"]),
            session["ordinal"],
            text(&session["problem"]),
        ));
    }
    out.push_str(
        "        (the store was changed outside magic-context; restore it from a backup)\n",
    );
    out
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or("?")
}
