//! `magic-context recomp [--session ID]`: rebuild a session's compartments from its raw log
//! (after a better historian model, or a bad run), without the session ever rendering half
//! a rebuild.
//!
//! Runs the historian from ordinal 0 into a staging area, chunk after chunk, up to where the
//! compartments in use end; those stay in use until the staged set reaches that end, then
//! the staged set replaces them in one transaction. Interrupted (a failed run, Ctrl-C), the
//! next `recomp` resumes from the staged end. After the swap it requests a head rebuild: the
//! session's next request busts the cache and re-renders `m[0]` from the new compartments.
//! Exits non-zero when a run failed.
//!
//! `--json` prints `{"session", "resumed_from", RUNS…, "staged_until", "target_until",
//! "swapped", "flush_requested", "drops_landing"}`, RUNS as in
//! [`crate::on_demand::runs_json`]; `swapped` is `{"replaced", "installed", "covered_until"}`
//! or null while the rebuild is incomplete.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use mc_historian::Ending;
use serde_json::json;

use crate::on_demand::{Operation, merge, runs_json, runs_text};
use crate::output::{pretty, write_stdout};

/// Arguments of `recomp`.
#[derive(Debug, Args)]
pub struct RecompArgs {
    /// The session whose compartments are rebuilt (its id as the client or the proxy named
    /// it) [default: the most recently seen session of the current folder's project].
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,

    /// Print one JSON object: {"session", "resumed_from", "runs", "calls", "compartments",
    /// "covered", "input_tokens", "output_tokens", "model", "ending", "failure",
    /// "staged_until", "target_until", "swapped", "flush_requested", "drops_landing"}.
    #[arg(long)]
    pub json: bool,

    /// Project root whose .magic-context.jsonc applies [default: the git root of the current
    /// directory, else the current directory].
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

/// Rebuilds (or resumes), swaps when complete, requests the head rebuild, reports.
pub fn run(args: &RecompArgs) -> anyhow::Result<ExitCode> {
    let operation = Operation::open(args.session.as_deref(), args.project.as_ref())?;
    let session = &operation.session;
    let rebuilt = operation
        .with_historian(|historian, ask| historian.recomp(ask))
        .with_context(|| format!("cannot rebuild the compartments of session `{session}`"))?;
    let landing = match rebuilt.swapped {
        Some(_) => Some(
            operation
                .engine
                .request_head_rebuild(session)
                .with_context(|| format!("cannot flush session `{session}`"))?,
        ),
        None => None,
    };
    let (staged_until, target_until) = operation
        .engine
        .store()
        .read(|tx| Ok((tx.staged_until(session)?, tx.summarised_until(session)?)))
        .context("cannot read the session's history")?;
    let mut report = json!({"session": session.as_str(), "resumed_from": rebuilt.resumed_from});
    merge(&mut report, runs_json(&rebuilt.runs));
    merge(
        &mut report,
        json!({
            "staged_until": staged_until,
            "target_until": target_until,
            "swapped": rebuilt.swapped.map(|swapped| json!({
                "replaced": swapped.replaced,
                "installed": swapped.installed,
                "covered_until": swapped.covered_until,
            })),
            "flush_requested": landing.is_some(),
            "drops_landing": landing.unwrap_or(0),
        }),
    );
    if args.json {
        write_stdout(&pretty(&report)?)?;
    } else {
        let mut text = format!("session {session}: ");
        if rebuilt.resumed_from > 0 {
            text.push_str(&format!(
                "resumed at message {} (staged earlier); ",
                rebuilt.resumed_from
            ));
        }
        text.push_str(&runs_text(&rebuilt.runs, "staged"));
        text.push_str(&match rebuilt.swapped {
            Some(swapped) => format!(
                "swapped in: {} compartments replace {} over messages 0-{}; the session's next \
                 request busts the cache and re-renders its history\n",
                swapped.installed,
                swapped.replaced,
                swapped.covered_until.saturating_sub(1)
            ),
            None if target_until == 0 => "no compartments to rebuild\n".to_owned(),
            None => format!(
                "the rebuild covers messages below {staged_until} of {target_until}; the \
                 compartments in use stay until it completes: run recomp again to resume\n"
            ),
        });
        write_stdout(&text)?;
    }
    Ok(if rebuilt.runs.ending == Ending::Failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
