//! `magic-context restore FILE`: puts a backup in place of the store.
//!
//! The file must be a store this build can open (its schema no newer than this binary's; an
//! older one is migrated when next opened). Nothing may use the store meanwhile: a running
//! `serve` (or `mcp`, or `run`'s proxy) would go on writing to the store it opened, not to the
//! restored one. SQLite sees another process's open connection, and the restore then stops
//! before changing anything. The previous store is kept beside it as
//! `context.db.before-restore`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use mc_store::{LocationEnv, Platform, resolve_data_dir, restore_backup};

use crate::output::write_stdout;

/// Arguments of `restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The backup to restore (written by `magic-context backup`). Stop `serve` first.
    #[arg(value_name = "FILE")]
    pub backup: PathBuf,
}

/// Restores and says where the previous store went.
pub fn run(args: &RestoreArgs) -> anyhow::Result<ExitCode> {
    let location = resolve_data_dir(&LocationEnv::from_process(), Platform::current())
        .context("cannot find the data directory")?;
    let path = location.db_path();
    let restored = restore_backup(&args.backup, &path).with_context(|| {
        format!(
            "cannot restore {} as the store {}",
            args.backup.display(),
            path.display()
        )
    })?;
    let previous = match &restored.previous {
        Some(kept) => format!("; the previous store is kept as {}", kept.display()),
        None => String::new(),
    };
    write_stdout(&format!(
        "restored {} (schema v{}) as the store {}{previous}\n",
        args.backup.display(),
        restored.schema_version,
        path.display()
    ))?;
    Ok(ExitCode::SUCCESS)
}
