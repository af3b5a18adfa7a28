//! `magic-context wrapup [--session ID] [--keep N]`: summarise a session's older history now,
//! rather than when the background historian's trigger is reached.
//!
//! Runs the historian chunk after chunk over everything unsummarised except the newest `N`
//! tags' messages (default `historian.live_tail_tags`), publishing each run, then requests a
//! flush: the session's next request moves its raw tail's boundary past the new compartments
//! (a cache bust the operator asked for). Exits non-zero when a run failed; what the runs
//! before it published stays and is landed all the same.
//!
//! `--json` prints `{"session", "keep_tags", RUNS…, "summarised_until", "flush_requested",
//! "drops_landing"}`, RUNS as in [`crate::on_demand::runs_json`].

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use mc_historian::Ending;
use serde_json::json;

use crate::on_demand::{Operation, merge, runs_json, runs_text};
use crate::output::{pretty, write_stdout};

/// Arguments of `wrapup`.
#[derive(Debug, Args)]
pub struct WrapupArgs {
    /// The session to compact (its id as the client or the proxy named it)
    /// [default: the most recently seen session of the current folder's project].
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,

    /// How many of the newest tags stay raw [default: historian.live_tail_tags].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub keep: Option<u32>,

    /// Print one JSON object: {"session", "keep_tags", "runs", "calls", "compartments",
    /// "covered", "input_tokens", "output_tokens", "model", "ending", "failure",
    /// "summarised_until", "flush_requested", "drops_landing"}.
    #[arg(long)]
    pub json: bool,

    /// Project root whose .magic-context.jsonc applies [default: the git root of the current
    /// directory, else the current directory].
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

/// Summarises, requests the flush, reports.
pub fn run(args: &WrapupArgs) -> anyhow::Result<ExitCode> {
    let operation = Operation::open(args.session.as_deref(), args.project.as_ref())?;
    let session = &operation.session;
    let keep = args
        .keep
        .unwrap_or(operation.engine.config().historian.live_tail_tags);
    let runs = operation
        .with_historian(|historian, ask| historian.wrapup(keep, ask))
        .with_context(|| format!("cannot summarise session `{session}`"))?;
    // Only new compartments are worth a bust.
    let landing = if runs.compartments > 0 {
        Some(
            operation
                .engine
                .request_flush(session)
                .with_context(|| format!("cannot flush session `{session}`"))?,
        )
    } else {
        None
    };
    let summarised_until = operation
        .engine
        .store()
        .read(|tx| tx.summarised_until(session))
        .context("cannot read the session's history")?;
    let mut report = json!({"session": session.as_str(), "keep_tags": keep});
    merge(&mut report, runs_json(&runs));
    merge(
        &mut report,
        json!({
            "summarised_until": summarised_until,
            "flush_requested": landing.is_some(),
            "drops_landing": landing.unwrap_or(0),
        }),
    );
    if args.json {
        write_stdout(&pretty(&report)?)?;
    } else {
        let mut text = format!("session {session}: ");
        text.push_str(&runs_text(&runs, "published"));
        text.push_str(&match landing {
            Some(_) => format!(
                "history now covers messages 0-{}; the newest {keep} tags stay raw; the \
                 session's next request busts the cache and moves its raw tail past them\n",
                summarised_until.saturating_sub(1)
            ),
            None => "nothing new to land; no flush requested\n".to_owned(),
        });
        write_stdout(&text)?;
    }
    Ok(if runs.ending == Ending::Failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
