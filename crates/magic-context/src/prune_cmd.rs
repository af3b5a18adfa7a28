//! `magic-context prune [--dry-run] [--older-than DAYS] [--session ID]`: removes sessions
//! the store no longer needs, and says what went.
//!
//! Without flags it removes the sessions last active more than `retention.session_days` ago
//! (`serve` does the same once a day); a fork's parent stays while the fork is younger.
//! `--session` removes one session and its forks, whatever their age. Each session goes in
//! one transaction; project memories stay. `--dry-run` runs the same deletions and rolls
//! them back, so its figures are exact.

use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use mc_config::{ConfigSources, load};
use mc_core::SessionId;
use mc_core::config::{RetentionConfig, cutoff_ms};
use mc_store::{
    AutoVacuum, LocationEnv, Platform, PruneRun, Reclaimed, Store, StoreError, StoreOptions,
    resolve_data_dir,
};
use serde_json::{Value, json};

use crate::clock::now_ms;
use crate::output::{pretty, write_stdout};
use crate::status_cmd::age;
use crate::store_size::{human_bytes, size_json, size_line};

/// Arguments of `prune`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Report what would be removed (exact rows and bytes) and remove nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Remove the sessions last active more than DAYS days ago [default:
    /// retention.session_days, 90].
    #[arg(long, value_name = "DAYS", conflicts_with = "session", value_parser = parse_days)]
    pub older_than: Option<u32>,

    /// Remove this session (and the forks made from it), whatever its age.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,

    /// Print one JSON object: {"dry_run", "sessions", "rows", "freed_bytes", "reclaimed",
    /// "store"}.
    #[arg(long)]
    pub json: bool,
}

/// `--older-than`'s value: whole days within the bounds of `retention.session_days`.
fn parse_days(text: &str) -> Result<u32, String> {
    let days: u64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a whole number of days (e.g. --older-than 30)"))?;
    RetentionConfig::SESSION_DAYS
        .check(days)
        .map_err(|error| error.to_string())
        .and_then(|days| u32::try_from(days).map_err(|error| error.to_string()))
}

/// Which sessions a run takes, in words for its report.
enum Selection {
    Older { days: u32, from_config: bool },
    Named(SessionId),
}

/// Prunes and reports.
pub fn run(args: &PruneArgs) -> anyhow::Result<ExitCode> {
    let now_ms = now_ms()?;
    let selection = match (&args.session, args.older_than) {
        (Some(id), _) => Selection::Named(SessionId::new(id.as_str()).with_context(|| {
            format!("`{id}` is not a session id; `magic-context status` lists the stored ones")
        })?),
        (None, Some(days)) => Selection::Older {
            days,
            from_config: false,
        },
        (None, None) => {
            let loaded = load(&ConfigSources::discover(None));
            for diagnostic in &loaded.diagnostics {
                tracing::warn!("config: {diagnostic}");
            }
            Selection::Older {
                days: loaded.config.retention.session_days,
                from_config: true,
            }
        }
    };
    let location = resolve_data_dir(&LocationEnv::from_process(), Platform::current())
        .context("cannot find the data directory")?;
    let path = location.db_path();
    let store = Store::open_location(&location, StoreOptions::default())
        .with_context(|| format!("cannot open the store {}", path.display()))?;
    // An age-based run checks each session again as it prunes it: one a request used
    // meanwhile stays.
    let (sessions, still_due_before) = match &selection {
        Selection::Named(id) => match store.session_and_forks(id) {
            Ok(sessions) => (sessions, None),
            Err(StoreError::UnknownSession { .. }) => bail!(
                "no session `{id}` in the store {}; `magic-context status` lists the stored \
                 sessions",
                path.display()
            ),
            Err(error) => return Err(error).context("cannot list the session's forks"),
        },
        Selection::Older { days, .. } => {
            let cutoff_ms = cutoff_ms(now_ms, *days);
            let due = store
                .sessions_due_for_prune(cutoff_ms)
                .context("cannot list the sessions due for pruning")?;
            (due, Some(cutoff_ms))
        }
    };
    let pruned = store
        .prune_sessions(&sessions, still_due_before, args.dry_run)
        .context(
            "pruning stopped: each session pruned before the failure is gone whole, the others \
             are untouched; run prune again to finish",
        )?;
    // Closing the store checkpoints its log into the file, so the size shown is the file's.
    drop(store);
    let text = if args.json {
        pretty(&json!({
            "dry_run": args.dry_run,
            "sessions": pruned.sessions.iter().map(|session| json!({
                "id": session.session.as_str(),
                "last_seen_ms": session.last_seen_ms,
                "rows": session.total_rows(),
                "freed_bytes": session.freed_bytes,
            })).collect::<Vec<_>>(),
            "rows": rows_json(&pruned),
            "freed_bytes": pruned.freed_bytes(),
            "reclaimed": pruned.reclaimed.as_ref().map(reclaimed_json),
            "store": size_json(&path),
        }))?
    } else {
        let mut text = report(&pruned, &selection, args.dry_run, now_ms);
        text.push_str(&size_line(&path));
        text
    };
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn rows_json(pruned: &PruneRun) -> Value {
    pruned
        .rows_by_table()
        .iter()
        .map(|rows| (rows.table.to_owned(), json!(rows.rows)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn reclaimed_json(reclaimed: &Reclaimed) -> Value {
    json!({
        "auto_vacuum": match reclaimed.mode {
            AutoVacuum::None => "none",
            AutoVacuum::Full => "full",
            AutoVacuum::Incremental => "incremental",
        },
        "page_size": reclaimed.page_size,
        "free_pages": reclaimed.free_pages_before,
        "pages_returned": reclaimed.pages_returned,
    })
}

/// The report in words: which sessions, the rows per table, the bytes, what became of the
/// free pages.
fn report(pruned: &PruneRun, selection: &Selection, dry_run: bool, now_ms: i64) -> String {
    let verb = if dry_run { "would remove" } else { "removed" };
    let which = match selection {
        Selection::Named(id) => format!("session `{id}` and its forks"),
        Selection::Older { days, from_config } => format!(
            "sessions last active more than {days} days ago{}",
            if *from_config {
                " (retention.session_days)"
            } else {
                ""
            }
        ),
    };
    if pruned.sessions.is_empty() {
        return format!("nothing to prune: no {which}\n");
    }
    let mut text = format!(
        "{verb} {} session{} ({which}):\n",
        pruned.sessions.len(),
        if pruned.sessions.len() == 1 { "" } else { "s" }
    );
    for session in &pruned.sessions {
        text.push_str(&format!(
            "  {}  last active {}, {} rows, {} in emptied pages\n",
            session.session,
            age(now_ms, session.last_seen_ms),
            session.total_rows(),
            human_bytes(session.freed_bytes)
        ));
    }
    let rows: Vec<String> = pruned
        .rows_by_table()
        .iter()
        .filter(|rows| rows.rows > 0)
        .map(|rows| format!("{} {}", rows.table, rows.rows))
        .collect();
    text.push_str(&format!("rows {verb}: {}\n", rows.join(", ")));
    text.push_str(&format!(
        "bytes freed: {} in emptied pages\n",
        human_bytes(pruned.freed_bytes())
    ));
    match &pruned.reclaimed {
        None => text.push_str("nothing was removed (--dry-run)\n"),
        Some(reclaimed) => text.push_str(&reclaimed_text(reclaimed)),
    }
    text
}

fn reclaimed_text(reclaimed: &Reclaimed) -> String {
    let bytes = |pages: u64| human_bytes(pages.saturating_mul(reclaimed.page_size));
    match reclaimed.mode {
        AutoVacuum::Incremental => format!(
            "incremental vacuum: {} free pages ({}) returned to the file system\n",
            reclaimed.pages_returned,
            bytes(reclaimed.pages_returned)
        ),
        AutoVacuum::Full => {
            "the store returns free pages at every commit (auto_vacuum full)\n".to_owned()
        }
        AutoVacuum::None => format!(
            "{} free pages ({}) stay in the file and hold the store's next writes: this store \
             predates incremental vacuum, so the file does not shrink; with no magic-context \
             running, `sqlite3 <store> 'PRAGMA auto_vacuum = INCREMENTAL; VACUUM'` rewrites it \
             once, smaller, and later prunes shrink it\n",
            reclaimed.free_pages_before,
            bytes(reclaimed.free_pages_before)
        ),
    }
}
