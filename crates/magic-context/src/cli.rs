//! The command line: global flags and one enum variant per working subcommand.
//!
//! Adding a subcommand is a variant of [`Command`] naming its module's argument type, plus
//! its arm in [`Command::run`]; the module itself owns its arguments and output. Only
//! subcommands that work are listed, so `--help` never advertises a placeholder.

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::backup_cmd::{self, BackupArgs};
use crate::bench_cmd::{self, BenchArgs};
use crate::config_cmd::{self, ConfigCommand};
use crate::dashboard_cmd::{self, DashboardArgs};
use crate::doctor::{self, DoctorArgs};
use crate::dream_cmd::{self, DreamArgs};
use crate::flush_cmd::{self, FlushArgs};
use crate::mcp_cmd::{self, McpArgs};
use crate::memory_cmd::{self, MemoryArgs};
use crate::profile_cmd::{self, ProfileArgs};
use crate::prune_cmd::{self, PruneArgs};
use crate::recomp_cmd::{self, RecompArgs};
use crate::reduce_cmd::{self, ReduceArgs};
use crate::replay_cmd::{self, ReplayArgs};
use crate::restore_cmd::{self, RestoreArgs};
use crate::run_cmd::{self, RunArgs};
use crate::search_cmd::{self, SearchArgs};
use crate::serve_cmd::{self, ServeArgs};
use crate::setup_cmd::{self, SetupArgs};
use crate::sim_cmd::{self, SimArgs};
use crate::status_cmd::{self, StatusArgs};
use crate::wrapup_cmd::{self, WrapupArgs};

/// Keeps a coding agent's session inside the context window forever, with a stable prompt
/// cache.
#[derive(Debug, Parser)]
#[command(name = "magic-context", version, about, arg_required_else_help = true)]
pub struct Cli {
    /// Log level for the logs written to stderr (by `run`, to its log file); overrides
    /// RUST_LOG [default: warn (run: info), or RUST_LOG when set].
    #[arg(long, global = true, value_name = "LEVEL", value_enum)]
    pub log_level: Option<LogLevel>,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a consistent copy of the store to a file (safe while `serve` runs).
    Backup(BackupArgs),
    /// Run a benchmark and print its figures (search recall, serve's memory and added latency).
    Bench(BenchArgs),
    /// Inspect configuration: the file schema, and the effective values with their sources.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Print the URL that opens the proxy's dashboard (sessions, cache timelines, memories)
    /// in a browser on this machine.
    Dashboard(DashboardArgs),
    /// Create the store on first use and check that it and the configuration are healthy.
    Doctor(DoctorArgs),
    /// Run the dreamer's maintenance tasks now (verify memories against the code), or
    /// `--list` the runs it recorded.
    Dream(DreamArgs),
    /// Make a session's next pass bust the cache and land its queued drops.
    Flush(FlushArgs),
    /// Serve the agent's tools (ctx_reduce, ctx_expand, …) over MCP on stdio.
    Mcp(McpArgs),
    /// List, add, edit, archive, export and import a project's memories.
    Memory(MemoryArgs),
    /// List, edit and remove the lines of your profile that the head shows.
    Profile(ProfileArgs),
    /// Remove sessions older than retention.session_days (or --older-than, or one --session)
    /// with all their rows; project memories stay. `--dry-run` reports without removing.
    Prune(PruneArgs),
    /// Rebuild a session's compartments from its raw log (resumable); swapped in when complete.
    Recomp(RecompArgs),
    /// Queue drops of a session's tags ("3-5,12"); they land on its next cache-busting pass.
    Reduce(ReduceArgs),
    /// Replay recorded sessions through the baselines and magic, and price every call.
    Replay(ReplayArgs),
    /// Put a backup in place of the store, keeping the previous one as
    /// `context.db.before-restore`; stop `serve` first.
    Restore(RestoreArgs),
    /// Run an agent through the proxy (started for it unless one listens) and exit with its
    /// code: `magic-context run -- claude`.
    Run(RunArgs),
    /// Search a project's memories, notes, raw message log, compartments and git commits.
    Search(SearchArgs),
    /// Run the proxy agents point their base URL at, until Ctrl-C.
    Serve(ServeArgs),
    /// Point a host (claude-code, opencode, codex, pi) at the proxy in its own config;
    /// `--dry-run` shows the diff, `--undo` reverts.
    Setup(SetupArgs),
    /// Run the simulated provider (Anthropic + OpenAI wire) as a server until Ctrl-C.
    Sim(SimArgs),
    /// Show each session's context use, cache reads, busts and recent calls.
    Status(StatusArgs),
    /// Summarise a session's older history now, keeping the newest tags raw, and land it.
    Wrapup(WrapupArgs),
}

impl Command {
    /// Whether the subcommand installs its own logging to a file (`run`), so `main` must not
    /// send logs to stderr.
    pub fn logs_to_a_file(&self) -> bool {
        matches!(self, Self::Run(_))
    }

    /// Runs the subcommand; the exit code is its verdict. `log_level` is for a subcommand
    /// that installs its own logging.
    pub fn run(self, log_level: Option<LogLevel>) -> anyhow::Result<ExitCode> {
        match self {
            Self::Backup(args) => backup_cmd::run(&args),
            Self::Config(command) => config_cmd::run(command),
            Self::Dashboard(args) => dashboard_cmd::run(&args),
            Self::Doctor(args) => doctor::run(&args),
            Self::Dream(args) => dream_cmd::run(&args),
            Self::Flush(args) => flush_cmd::run(&args),
            Self::Mcp(args) => mcp_cmd::run(&args),
            Self::Memory(args) => memory_cmd::run(&args),
            Self::Bench(args) => bench_cmd::run(&args),
            Self::Profile(args) => profile_cmd::run(&args),
            Self::Prune(args) => prune_cmd::run(&args),
            Self::Recomp(args) => recomp_cmd::run(&args),
            Self::Reduce(args) => reduce_cmd::run(&args),
            Self::Replay(args) => replay_cmd::run(&args),
            Self::Restore(args) => restore_cmd::run(&args),
            Self::Run(args) => run_cmd::run(&args, log_level),
            Self::Search(args) => search_cmd::run(&args),
            Self::Serve(args) => serve_cmd::run(&args),
            Self::Setup(args) => setup_cmd::run(&args),
            Self::Sim(args) => sim_cmd::run(&args),
            Self::Status(args) => status_cmd::run(&args),
            Self::Wrapup(args) => wrapup_cmd::run(&args),
        }
    }
}

/// Verbosity of stderr logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogLevel {
    // No logs at all.
    Off,
    // Failures only.
    Error,
    // Failures and things that were ignored or retried.
    Warn,
    // One line per proxied request.
    Info,
    // Decisions and their reasons.
    Debug,
    // Everything, including request bodies (never credentials).
    Trace,
}

impl LogLevel {
    /// The `tracing` filter directive for this level.
    pub fn directive(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
            Self::Debug => "debug",
            Self::Trace => "trace",
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn log_level_is_global() {
        let cli = Cli::try_parse_from(["magic-context", "config", "show", "--log-level", "debug"])
            .unwrap();
        assert_eq!(cli.log_level, Some(LogLevel::Debug));
    }
}
