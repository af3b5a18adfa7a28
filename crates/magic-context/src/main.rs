//! `magic-context`: the command-line entry point.
//!
//! This crate parses arguments, installs logging and calls into the library crates; it holds
//! no logic of its own (DESIGN §3). Each subcommand lives in its own module beside `cli.rs`.

mod agent_launch;
mod agent_process;
mod backup_cmd;
mod bench_cmd;
mod bench_dreamer;
mod bench_dreamer_project;
mod bench_flat_upstream;
mod bench_locomo;
mod bench_locomo_cv;
mod bench_memory;
mod bench_memory_turns;
mod bench_recall_dropped;
mod bench_store;
mod bench_team_store;
mod browser_open;
mod cli;
mod clock;
mod config_cmd;
mod config_diff;
mod config_doc;
mod dashboard_cmd;
mod doctor;
mod doctor_hosts;
mod dream_cmd;
mod dream_proposals;
mod dreamer_runs;
mod flush_cmd;
mod host_config;
mod locomo;
mod logging;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod malloc_arenas;
mod mcp_cmd;
mod mcp_command;
mod memory_cmd;
mod memory_lines;
mod memory_place;
mod on_demand;
mod output;
mod profile_cmd;
mod proxy_probe;
mod prune_cmd;
mod recomp_cmd;
mod reduce_cmd;
mod replay_cmd;
mod replay_sweep;
mod restore_cmd;
mod run_cmd;
mod run_log;
mod search_cmd;
mod serve_cmd;
mod session_choice;
mod setup_cmd;
mod setup_record;
mod sim_cmd;
mod status_cmd;
mod status_history;
mod status_viewpoint;
mod store_size;
mod team_link;
mod team_report;
mod upstream_reach;
mod workspace_members;
mod wrapup_cmd;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

use crate::cli::Cli;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // `run` shares the terminal with the agent, so it logs to a file it opens itself.
    if !cli.command.logs_to_a_file() {
        logging::init(cli.log_level);
    }
    match cli.command.run(cli.log_level) {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS, // `magic-context ... | head`
        Err(err) => {
            // Ignoring a failed write here: stderr is the last channel left to report on.
            let _ = writeln!(io::stderr().lock(), "error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|cause| cause.downcast_ref::<io::Error>())
        .any(|io_err| io_err.kind() == io::ErrorKind::BrokenPipe)
}
