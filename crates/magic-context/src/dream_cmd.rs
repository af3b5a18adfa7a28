//! `magic-context dream [--task T] [--project DIR] [--list] [--show-proposals] [--json]`:
//! runs the dreamer's tasks now, lists the runs it recorded, or prints the doc updates
//! `maintain_docs` proposed ([`crate::dream_proposals`]).
//!
//! A run now is what `serve`'s scheduler does at a task's cron time, under the same lease
//! (a `serve` running the same task on the same project makes this one skip, and the other
//! way round), recorded the same way. Without `--project` it runs on every project the
//! proxy has served (their folders are recorded when a session arrives); without `--task`,
//! every task this version runs. The models are the historian's, chosen as `wrapup`
//! chooses them (`historian.endpoint`, else a provider key in the environment), since no
//! client call lends its credentials here; without one, the tasks that need no model
//! (`archive_stale_memories`, `promote_user_profile`, and `evaluate_smart_notes` for the
//! conditions a rule reads) still run and the others are recorded as skipped.
//!
//! `--json` prints `{"runs": [RUN, …]}` (RUN in [`crate::dreamer_runs`]), the runs made now
//! or, with `--list`, the newest recorded ones.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;
use mc_config::{ConfigSources, load};
use mc_core::ProjectId;
use mc_dreamer::{InFlightCalls, Limits, LlmJudge, Runner, Task, TaskSettings, TeamMemories};
use mc_historian::{EnvLookup, standalone_endpoints};
use mc_llm::{LlmClient, RetryPolicy};
use mc_store::{
    DreamerRun, LocationEnv, Platform, RunOutcome, Store, StoreOptions, resolve_data_dir,
};
use mc_team_store::{TeamStore, TeamSync};
use serde_json::json;

use crate::clock::now_ms;
use crate::dream_proposals::show_proposals;
use crate::dreamer_runs::{run_json, runs_text};
use crate::memory_cmd::project_of;
use crate::output::{pretty, write_stdout};
use crate::status_viewpoint::Viewpoint;

/// Arguments of `dream`.
#[derive(Debug, Args)]
pub struct DreamArgs {
    /// Run only this task (consolidate_memories, verify_memories, archive_stale_memories,
    /// rewrite_verbose_memories, maintain_docs, evaluate_smart_notes, promote_user_profile).
    #[arg(long, value_name = "TASK")]
    pub task: Option<String>,

    /// Run on the project of this directory only [default: every project the proxy has
    /// served]; with --list, list only its runs.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,

    /// List the recorded runs instead of running anything.
    #[arg(long)]
    pub list: bool,

    /// Print the doc updates maintain_docs proposed (unified diffs under the data
    /// directory) instead of running anything; with --project, only that project's.
    #[arg(long, conflicts_with_all = ["list", "task"])]
    pub show_proposals: bool,

    /// How many runs --list shows.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub limit: usize,

    /// Print one JSON object: {"runs": [RUN, …]}.
    #[arg(long)]
    pub json: bool,
}

/// Runs the tasks now, or lists the runs; fails when a run failed.
pub fn run(args: &DreamArgs) -> anyhow::Result<ExitCode> {
    let location = resolve_data_dir(&LocationEnv::from_process(), Platform::current())
        .context("cannot find the data directory")?;
    let store = Store::open_location(&location, StoreOptions::default())
        .with_context(|| format!("cannot open the store {}", location.db_path().display()))?;
    let folders = store
        .read(|tx| tx.project_folders())
        .context("cannot read the projects' folders")?;
    let view = Viewpoint {
        now_ms: now_ms()?,
        here: Viewpoint::current_folder(),
        folders,
    };
    let project = match &args.project {
        Some(directory) => Some((project_of(directory)?, std::fs::canonicalize(directory)?)),
        None => None,
    };
    if args.show_proposals {
        let shown = show_proposals(
            &location.dir,
            project.as_ref().map(|(id, _)| id),
            &view,
            args.json,
        )?;
        write_stdout(&shown)?;
        return Ok(ExitCode::SUCCESS);
    }
    let runs = if args.list {
        store
            .read(|tx| tx.dreamer_runs(project.as_ref().map(|(id, _)| id), args.limit))
            .context("cannot read the dreamer's runs")?
    } else {
        dream_now(args, &store, &view, project)?
    };
    let text = if args.json {
        let runs: Vec<_> = runs.iter().map(|run| run_json(run, &view)).collect();
        pretty(&json!({ "runs": runs }))?
    } else {
        runs_text(&runs, &view)
    };
    write_stdout(&text)?;
    let failed = runs.iter().any(|run| run.outcome == RunOutcome::Failed);
    Ok(if failed && !args.list {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs the chosen tasks on the chosen projects, one at a time.
fn dream_now(
    args: &DreamArgs,
    store: &Store,
    view: &Viewpoint,
    project: Option<(ProjectId, PathBuf)>,
) -> anyhow::Result<Vec<DreamerRun>> {
    let tasks = match &args.task {
        Some(name) => vec![Task::parse(name)?],
        None => Task::ALL.to_vec(),
    };
    let projects: Vec<(ProjectId, PathBuf)> = match project {
        Some(one) => vec![one],
        None => {
            let mut all: Vec<_> = view
                .folders
                .iter()
                .map(|(id, folder)| (id.clone(), PathBuf::from(folder)))
                .collect();
            all.sort();
            all
        }
    };
    if projects.is_empty() {
        bail!("no project has been served by the proxy yet; pass --project DIR to name one");
    }
    let config_root = projects.first().map(|(_, folder)| folder.as_path());
    let config = load(&ConfigSources::discover(config_root)).config;
    let env: EnvLookup<'_> = &|name| std::env::var(name).ok();
    let endpoints = match standalone_endpoints(&config, None, env) {
        Ok(endpoints) => endpoints,
        // The deterministic tasks run without a model; one that needs it is then recorded
        // as skipped, saying why.
        Err(_) if !tasks.iter().any(|task| task.needs_model()) => Vec::new(),
        Err(error) if args.task.is_none() => {
            tracing::warn!(%error, "dream: no model to ask; only the tasks that need none run");
            Vec::new()
        }
        Err(error) => return Err(error.into()),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let client = LlmClient::new(RetryPolicy::default()).context("cannot build the HTTP client")?;
    let judge = LlmJudge::new(client, endpoints, runtime.handle().clone());
    let owner = format!("dream-{}", std::process::id());
    // With a team store, the memory tasks wait their turn behind every proxy of the team.
    let team = match config.team_store.url.clone() {
        Some(url) => {
            let team = TeamStore::new(url)?;
            // An unreachable server is found again when the lease is asked for, and the
            // run's record says so.
            let _migrated = runtime.block_on(team.migrate());
            // The sync's own handle on the store file, as `serve`'s link has.
            let queue = Store::open_with(store.path(), StoreOptions::default())
                .context("cannot open the store for the team store's queue")?;
            Some(
                TeamMemories::new(
                    TeamSync::new(Arc::new(queue), team),
                    runtime.handle().clone(),
                    &owner,
                )
                .context("cannot name this run on the team store's leases")?,
            )
        }
        None => None,
    };
    // No proxy's calls are in flight in this process: each model call asks at once.
    let calls = InFlightCalls::default();
    let clock = || now_ms().unwrap_or(0);
    let runner = Runner {
        store,
        model: &judge,
        calls: &calls,
        owner: &owner,
        clock: &clock,
        limits: Limits::default(),
        settings: TaskSettings::of(&config.dreamer),
        team: team.as_ref(),
    };
    let mut runs = Vec::new();
    for task in tasks {
        for (project, folder) in &projects {
            let run = runner
                .run(task, project, Some(Path::new(folder)))
                .context("cannot record the dreamer's run")?;
            runs.push(run);
        }
    }
    Ok(runs)
}
