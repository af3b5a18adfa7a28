//! `magic-context setup <host>`: writes a host's own config so it goes through the proxy,
//! registers the MCP server where the host has MCP, and turns the host's own compaction off
//! where it has a switch (the proxy keeps the session inside the window).
//!
//! Safe to run at any time: only the keys in [`crate::host_config`] are written, the rest of
//! each file is kept; a backup is taken before a file's first change; a second run changes
//! nothing; `--dry-run` prints the diff and writes nothing; `--undo` restores each backup
//! byte for byte (and removes files `setup` created). When the host rewrote a file since
//! (Claude Code rewrites `~/.claude.json` as it runs), `--undo` instead puts back only the
//! keys `setup` wrote, so the host's own changes survive.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};
use clap::Args;
use mc_config::{ConfigSources, load};
use mc_store::{LocationEnv, Platform, resolve_data_dir};

use crate::config_diff::unified_diff;
use crate::config_doc::ConfigDoc;
use crate::host_config::{FilePlan, Host, HostEnv, Purpose, plan};
use crate::mcp_command;
use crate::output::write_stdout;
use crate::setup_record::{self, FileRecord, KeyRecord, SetupRecord, backup_path, hash_of};

/// Arguments of `setup`.
#[derive(Debug, Args)]
pub struct SetupArgs {
    /// The host to configure.
    #[arg(value_enum)]
    pub host: Host,

    /// Print what would change as a unified diff, and write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Put back what `setup` changed for this host.
    #[arg(long)]
    pub undo: bool,

    /// The proxy's URL [default: http:// and proxy.listen, e.g. http://127.0.0.1:4141].
    #[arg(long, value_name = "URL", conflicts_with = "undo")]
    pub proxy_url: Option<String>,
}

/// Sets the host up, or undoes it.
pub fn run(args: &SetupArgs) -> anyhow::Result<ExitCode> {
    let env = HostEnv::from_process()
        .context("HOME is not set; setup writes the host's config in your home directory")?;
    let data_dir = resolve_data_dir(&LocationEnv::from_process(), Platform::current())
        .context("cannot find the data directory, where setup keeps what it changed")?
        .dir;
    if args.undo {
        undo(args.host, &data_dir, args.dry_run)?;
    } else {
        let config = load(&ConfigSources::discover(None)).config;
        let proxy_url = match &args.proxy_url {
            Some(url) => normalise_proxy_url(url)?,
            None => format!("http://{}", config.proxy.listen),
        };
        let exe = std::env::current_exe()
            .context("cannot find this program's path, which the host runs as its MCP server")?;
        let mcp = mcp_command::choose(&exe, std::env::var_os("PATH").as_deref());
        if let Some(warning) = &mcp.warning {
            // Ignoring a failed write: the setup itself still goes ahead.
            let _ = writeln!(std::io::stderr().lock(), "warning: {warning}");
        }
        let mut plans = plan(args.host, &env, &proxy_url, &mcp.command);
        if !config.compaction.enabled {
            // `compaction.enabled: false` leaves the window to the host: its own compaction
            // must stay on.
            for file in &mut plans {
                file.edits
                    .retain(|edit| edit.purpose != Purpose::Compaction);
            }
        }
        apply(args.host, &plans, &proxy_url, &data_dir, args.dry_run)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `URL` without a trailing slash or `/v1` (each host adds what its SDK needs).
fn normalise_proxy_url(url: &str) -> anyhow::Result<String> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        bail!("--proxy-url must start with http:// or https://, e.g. http://127.0.0.1:4141");
    }
    let trimmed = url.trim_end_matches('/');
    Ok(trimmed.strip_suffix("/v1").unwrap_or(trimmed).to_owned())
}

/// One file's change: its plan, its text before (`None`: missing) and after.
struct Change<'a> {
    plan: &'a FilePlan,
    before: Option<String>,
    after: String,
    keys: Vec<KeyRecord>,
}

fn apply(
    host: Host,
    plans: &[FilePlan],
    proxy_url: &str,
    data_dir: &Path,
    dry_run: bool,
) -> anyhow::Result<()> {
    let mut changes = Vec::new();
    for file in plans {
        if let Some(change) = change_for(file)? {
            changes.push(change);
        }
    }
    if changes.is_empty() {
        return write_stdout(&format!(
            "{} is already set up for {proxy_url}; nothing to change\n",
            host.id()
        ));
    }
    if dry_run {
        let diffs: String = changes
            .iter()
            .map(|change| {
                unified_diff(
                    &change.plan.path,
                    change.before.as_deref(),
                    Some(&change.after),
                )
            })
            .collect();
        return write_stdout(&diffs);
    }
    let mut record = setup_record::read(data_dir, host)?.unwrap_or_else(|| SetupRecord {
        host: host.id().to_owned(),
        proxy_url: proxy_url.to_owned(),
        files: Vec::new(),
    });
    record.proxy_url = proxy_url.to_owned();
    let mut report = String::new();
    for change in changes {
        let path = &change.plan.path;
        let index = match record.files.iter().position(|file| &file.path == path) {
            Some(index) => index,
            None => {
                let backup = match change.before {
                    Some(_) => {
                        let backup = backup_path(path);
                        std::fs::copy(path, &backup).with_context(|| {
                            format!("cannot back {} up to {}", path.display(), backup.display())
                        })?;
                        Some(backup)
                    }
                    None => None,
                };
                record.files.push(FileRecord {
                    path: path.clone(),
                    format: change.plan.format,
                    backup,
                    written_blake3: String::new(),
                    keys: Vec::new(),
                    created_dirs: Vec::new(),
                });
                record.files.len() - 1
            }
        };
        let file = &mut record.files[index];
        for key in change.keys {
            match file.keys.iter_mut().find(|known| known.key == key.key) {
                // The first prior is the one to restore; later runs only change the value.
                Some(known) => known.value = key.value,
                None => file.keys.push(key),
            }
        }
        file.written_blake3 = hash_of(change.after.as_bytes());
        for dir in missing_dirs(path) {
            if !file.created_dirs.contains(&dir) {
                file.created_dirs.push(dir);
            }
        }
        report.push_str(&match &file.backup {
            Some(backup) => format!("wrote {} (backup: {})\n", path.display(), backup.display()),
            None => format!("created {}\n", path.display()),
        });
        // The record goes first, so a run interrupted before (or while) writing the file can
        // still be undone: undo then finds the file differs and reverts key by key.
        setup_record::write(data_dir, &record)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        std::fs::write(path, &change.after)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    report.push_str(&format!(
        "{} now goes through {proxy_url}; start the proxy with `magic-context serve`, check with `magic-context doctor`, revert with `magic-context setup {} --undo`\n",
        host.id(),
        host.id()
    ));
    write_stdout(&report)
}

/// The folders above `file` that do not exist yet, outermost first: what writing it creates.
fn missing_dirs(file: &Path) -> Vec<PathBuf> {
    let mut missing: Vec<PathBuf> = file
        .ancestors()
        .skip(1)
        .take_while(|dir| !dir.as_os_str().is_empty() && !dir.exists())
        .map(Path::to_path_buf)
        .collect();
    missing.reverse();
    missing
}

/// Removes the folders `setup` created, innermost first, each only while it is empty: a
/// folder the host or the user has put something in since stays.
fn remove_created_dirs(dirs: &[PathBuf]) {
    for dir in dirs.iter().rev() {
        // Not empty, or already gone: either way it is not ours to remove any more.
        let _ = std::fs::remove_dir(dir);
    }
}

/// What `file` needs, or `None` when every key already has its value.
fn change_for(file: &FilePlan) -> anyhow::Result<Option<Change<'_>>> {
    let before = read_optional(&file.path)?;
    let mut doc = ConfigDoc::parse(file.format, before.as_deref().unwrap_or(file.new_file_text))
        .map_err(|problem| anyhow!("{} {problem}", file.path.display()))?;
    let mut keys = Vec::new();
    for edit in &file.edits {
        let prior = doc.get(&edit.key);
        if prior.as_ref() == Some(&edit.value) {
            continue;
        }
        let created_parents = edit.key.len() - 1 - doc.existing_parents(&edit.key);
        doc.set(&edit.key, &edit.value)
            .map_err(|problem| anyhow!("{}: {problem}", file.path.display()))?;
        keys.push(KeyRecord {
            key: edit.key.clone(),
            value: edit.value.clone(),
            prior,
            created_parents,
            purpose: edit.purpose.into(),
        });
    }
    if keys.is_empty() {
        return Ok(None);
    }
    let after = doc
        .render()
        .map_err(|problem| anyhow!("{}: {problem}", file.path.display()))?;
    Ok(Some(Change {
        plan: file,
        before,
        after,
        keys,
    }))
}

/// What undoing one file does: its new text, or `None` to remove it.
struct Restore {
    path: PathBuf,
    before: Option<String>,
    after: Option<Vec<u8>>,
    how: &'static str,
}

fn undo(host: Host, data_dir: &Path, dry_run: bool) -> anyhow::Result<()> {
    let Some(record) = setup_record::read(data_dir, host)? else {
        return write_stdout(&format!(
            "{} was not set up by magic-context; nothing to undo\n",
            host.id()
        ));
    };
    let mut restores = Vec::new();
    for file in record.files.iter().rev() {
        restores.push(restore_for(file)?);
    }
    if dry_run {
        let diffs: String = restores
            .iter()
            .map(|restore| {
                let after = restore
                    .after
                    .as_ref()
                    .map(|bytes| String::from_utf8_lossy(bytes).into_owned());
                unified_diff(&restore.path, restore.before.as_deref(), after.as_deref())
            })
            .collect();
        return write_stdout(&diffs);
    }
    let mut report = String::new();
    for (restore, file) in restores.iter().zip(record.files.iter().rev()) {
        match &restore.after {
            Some(bytes) => std::fs::write(&restore.path, bytes)
                .with_context(|| format!("cannot write {}", restore.path.display()))?,
            None if restore.before.is_some() => std::fs::remove_file(&restore.path)
                .with_context(|| format!("cannot remove {}", restore.path.display()))?,
            None => {}
        }
        if restore.after.is_none() {
            remove_created_dirs(&file.created_dirs);
        }
        if let Some(backup) = &file.backup {
            match std::fs::remove_file(backup) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => {
                    return Err(error)
                        .with_context(|| format!("cannot remove {}", backup.display()));
                }
            }
        }
        report.push_str(&format!("{} {}\n", restore.how, restore.path.display()));
    }
    setup_record::remove(data_dir, host)?;
    report.push_str(&format!(
        "{} no longer goes through magic-context\n",
        host.id()
    ));
    write_stdout(&report)
}

/// How to put `file` back: the backup's bytes when the file is as `setup` left it (or
/// gone), else its current text with only `setup`'s keys reverted.
fn restore_for(file: &FileRecord) -> anyhow::Result<Restore> {
    let current = match std::fs::read(&file.path) {
        Ok(bytes) => Some(bytes),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => {
            return Err(error).with_context(|| format!("cannot read {}", file.path.display()));
        }
    };
    let before = current
        .as_ref()
        .map(|bytes| String::from_utf8_lossy(bytes).into_owned());
    let unchanged = current
        .as_ref()
        .is_none_or(|bytes| hash_of(bytes) == file.written_blake3);
    if unchanged {
        let (after, how) = match &file.backup {
            Some(backup) => (
                Some(std::fs::read(backup).with_context(|| {
                    format!(
                        "the backup {} is missing; restore {} by hand",
                        backup.display(),
                        file.path.display()
                    )
                })?),
                "restored",
            ),
            None => (None, "removed"),
        };
        return Ok(Restore {
            path: file.path.clone(),
            before,
            after,
            how,
        });
    }
    let mut doc = ConfigDoc::parse(file.format, before.as_deref().unwrap_or(""))
        .map_err(|problem| anyhow!("{} {problem}", file.path.display()))?;
    for key in file.keys.iter().rev() {
        // A key the user has changed since is theirs now.
        if doc.get(&key.key).as_ref() != Some(&key.value) {
            continue;
        }
        match &key.prior {
            Some(prior) => doc
                .set(&key.key, prior)
                .map_err(|problem| anyhow!("{}: {problem}", file.path.display()))?,
            None => doc.remove(&key.key, key.created_parents),
        }
    }
    let after = doc
        .render()
        .map_err(|problem| anyhow!("{}: {problem}", file.path.display()))?;
    Ok(Restore {
        path: file.path.clone(),
        before,
        after: Some(after.into_bytes()),
        how: "reverted the keys setup wrote in (the file changed since)",
    })
}

/// The file's text, `None` when it does not exist.
fn read_optional(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| anyhow!("{} is not UTF-8 text; edit it by hand", path.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error).with_context(|| format!("cannot read {}", path.display())),
    }
}
