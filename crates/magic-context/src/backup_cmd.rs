//! `magic-context backup --out FILE [--force]`: a consistent copy of the store, safe to take
//! while `serve` runs (SQLite's online backup API reads one snapshot; writers never wait).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use mc_store::{LocationEnv, Platform, Store, StoreOptions, resolve_data_dir};

use crate::output::write_stdout;
use crate::store_size::human_bytes;

/// Arguments of `backup`.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The file to write: one self-contained SQLite file, readable only by you.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,

    /// Replace FILE if it exists (only once the new copy is complete).
    #[arg(long)]
    pub force: bool,
}

/// Writes the copy and says where.
pub fn run(args: &BackupArgs) -> anyhow::Result<ExitCode> {
    let location = resolve_data_dir(&LocationEnv::from_process(), Platform::current())
        .context("cannot find the data directory")?;
    let path = location.db_path();
    let store = Store::open_location(&location, StoreOptions::default())
        .with_context(|| format!("cannot open the store {}", path.display()))?;
    store.backup_to(&args.out, args.force).with_context(|| {
        format!(
            "cannot back up the store {} to {}",
            path.display(),
            args.out.display()
        )
    })?;
    let bytes = std::fs::metadata(&args.out)
        .map(|meta| meta.len())
        .unwrap_or(0);
    write_stdout(&format!(
        "backed up {} to {} ({}); `magic-context restore {}` puts it back\n",
        path.display(),
        args.out.display(),
        human_bytes(bytes),
        args.out.display()
    ))?;
    Ok(ExitCode::SUCCESS)
}
