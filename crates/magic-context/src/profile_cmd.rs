//! `magic-context profile list|edit|remove`: the user's profile, the short lines about the
//! person the agent works for that `m[0]` shows (promoted from what the historian observed
//! often enough). An edit or a removal reaches a session's `m[0]` at its next fold.

use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use mc_store::{LocationEnv, Platform, ProfileLine, Store, StoreOptions, resolve_data_dir};
use serde_json::{Value, json};

use crate::clock::now_ms;
use crate::output::{pretty, write_stdout};

/// Arguments of `profile`.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// What to do with the profile.
    #[command(subcommand)]
    pub action: ProfileAction,

    /// Print one JSON object instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

/// The profile's actions.
#[derive(Debug, Subcommand)]
pub enum ProfileAction {
    /// List the profile's lines, oldest first.
    List {
        /// Show removed lines too.
        #[arg(long)]
        all: bool,
    },
    /// Change a line's text (a removed line comes back with it).
    Edit {
        /// The line's id, as `list` shows it.
        id: u64,
        /// Its new text.
        text: String,
    },
    /// Remove a line; it is kept, marked, and never promoted again.
    Remove {
        /// The line's id, as `list` shows it.
        id: u64,
    },
}

/// Runs the action on the store's profile.
pub fn run(args: &ProfileArgs) -> anyhow::Result<ExitCode> {
    let location = resolve_data_dir(&LocationEnv::from_process(), Platform::current())
        .context("cannot find the data directory")?;
    let store = Store::open_location(&location, StoreOptions::default())
        .with_context(|| format!("cannot open the store {}", location.db_path().display()))?;
    match &args.action {
        ProfileAction::List { all } => {
            let lines = store
                .read(|tx| tx.profile_lines(*all))
                .context("cannot read the profile")?;
            write_stdout(&if args.json {
                pretty(&json!({"lines": lines.iter().map(line_json).collect::<Vec<_>>()}))?
            } else {
                list_text(&lines)
            })?;
        }
        ProfileAction::Edit { id, text } => {
            if text.trim().is_empty() {
                bail!("a profile line needs some text; use `profile remove {id}` to remove it");
            }
            let now = now_ms()?;
            if !store.write(|tx| tx.edit_profile_line(*id, text, now))? {
                bail!("no profile line {id}; `magic-context profile list --all` shows them");
            }
            report(&store, *id, args.json, "edited")?;
        }
        ProfileAction::Remove { id } => {
            let now = now_ms()?;
            if !store.write(|tx| tx.remove_profile_line(*id, now))? {
                bail!("no profile line {id}; `magic-context profile list --all` shows them");
            }
            report(&store, *id, args.json, "removed")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Says what became of line `id`.
fn report(store: &Store, id: u64, as_json: bool, done: &str) -> anyhow::Result<()> {
    let line = store
        .read(|tx| tx.profile_line(id))?
        .context("the profile line went away")?;
    write_stdout(&if as_json {
        pretty(&line_json(&line))?
    } else {
        format!(
            "profile line {id} {done}; sessions show it at their next fold\n{}",
            list_text(std::slice::from_ref(&line))
        )
    })
}

fn line_json(line: &ProfileLine) -> Value {
    json!({
        "id": line.id,
        "text": line.text,
        "status": if line.removed { "removed" } else { "active" },
        "created_ms": line.created_ms,
        "updated_ms": line.updated_ms,
    })
}

fn list_text(lines: &[ProfileLine]) -> String {
    if lines.is_empty() {
        return "the profile is empty: lines come from what the historian observes about you, \
                once seen often enough (dreamer.user_profile_promotion_sightings)\n"
            .to_owned();
    }
    lines
        .iter()
        .map(|line| {
            let removed = if line.removed { " (removed)" } else { "" };
            format!("{:>4}  {}{removed}\n", line.id, line.text)
        })
        .collect()
}
