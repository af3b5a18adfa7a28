//! `magic-context flush [--session ID]`: the session's next pass busts and lands its queued
//! work, instead of waiting for a pass that busts anyway.
//!
//! Only a flag is stored; the provider sees the change on the session's next request. The
//! store is opened as `reduce` opens it.

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use mc_core::config::Config;
use mc_engine::Engine;
use mc_store::{LocationEnv, Platform, Store, StoreOptions, resolve_data_dir};
use serde_json::json;

use crate::output::{pretty, write_stdout};
use crate::session_choice::choose;

/// Arguments of `flush`.
#[derive(Debug, Args)]
pub struct FlushArgs {
    /// The session to flush (its id as the client or the proxy named it)
    /// [default: the most recently seen session of the current folder's project].
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,

    /// Print one JSON object: {"session", "flush_requested", "drops_landing"}.
    #[arg(long)]
    pub json: bool,
}

/// Marks the session and says what its next pass will land.
pub fn run(args: &FlushArgs) -> anyhow::Result<ExitCode> {
    let location = resolve_data_dir(&LocationEnv::from_process(), Platform::current())
        .context("cannot find the data directory")?;
    let store = Store::open_location(&location, StoreOptions::default())
        .with_context(|| format!("cannot open the store {}", location.db_path().display()))?;
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let session = choose(&store, args.session.as_deref(), &here)?;
    let engine = Engine::new(store, Config::default());
    let landing = engine
        .request_flush(&session)
        .with_context(|| format!("cannot flush session `{session}`"))?;
    if args.json {
        write_stdout(&pretty(&json!({
            "session": session.as_str(),
            "flush_requested": true,
            "drops_landing": landing,
        }))?)?;
    } else {
        write_stdout(&format!(
            "session {session}: its next request busts the cache and lands {landing} queued \
             drop{}; nothing changes before it\n",
            if landing == 1 { "" } else { "s" }
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
