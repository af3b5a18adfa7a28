//! `magic-context sim`: runs the simulated provider as a server, for end-to-end tests of
//! real clients (Claude Code, the proxy) without a real provider.
//!
//! Prints one line to stderr once it listens (`mc-sim listening on http://ADDR`, with the
//! real port when `--listen` asked for port 0, so a test harness can read it), serves until
//! Ctrl-C, then prints a one-line summary of the calls it priced.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use mc_sim::TokenScale;
use mc_sim::recording;
use mc_sim::script::Script;
use mc_sim::server::{HistorianMode, Responder, SimConfig, SimServer};

/// Arguments of `sim`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("responder").required(true).args(["script", "trajectory"])))]
pub struct SimArgs {
    /// Address to listen on; port 0 picks a free port, shown in the line printed on stderr.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,

    /// A JSON script of the turns the model plays (see `mc_sim::script`).
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,

    /// A recorded session (swe-traj, anthropic-capture or claude-code; detected) whose
    /// recorded answers the model gives.
    #[arg(long, value_name = "FILE")]
    pub trajectory: Option<PathBuf>,

    /// Overrides every model's context window, in tokens.
    #[arg(long, value_name = "TOKENS")]
    pub model_window: Option<u64>,

    /// Makes the provider count this many times the tokens its calibration says (1.25 = 25%
    /// more), so a client's estimate and the reported usage disagree by a known factor.
    #[arg(long, value_name = "FACTOR", default_value = "1")]
    pub token_scale: TokenScale,

    /// How calls that force the historian's `record_history` tool are answered: `honest` (a
    /// summary of their transcript), `garbage` (an input that breaks the tool's schema),
    /// `overloaded` (529, or 503 on OpenAI), `stall` (no answer until the server stops) or
    /// `slow` (the honest answer, sent 300 ms later).
    /// Other calls are served as usual.
    #[arg(long, value_name = "MODE", default_value = "honest")]
    pub historian: HistorianMode,

    /// How calls that force the dreamer's `judge_memories` tool are answered: `honest`
    /// (verdicts from the evidence in the prompt: a memory whose file is gone archived, a
    /// changed value updated), or failing as `--historian` does (`garbage`, `overloaded`,
    /// `stall`, `slow`).
    #[arg(long, value_name = "MODE", default_value = "honest")]
    pub dreamer: HistorianMode,
}

/// Serves until Ctrl-C.
pub fn run(args: &SimArgs) -> anyhow::Result<ExitCode> {
    let responder = responder(args)?;
    let mut config = SimConfig::new(responder)
        .with_token_scale(args.token_scale)
        .with_historian(args.historian)
        .with_dreamer(args.dreamer);
    if let Some(window_tokens) = args.model_window {
        config = config.with_window(window_tokens);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve(args.listen, config))?;
    Ok(ExitCode::SUCCESS)
}

fn responder(args: &SimArgs) -> anyhow::Result<Responder> {
    if let Some(path) = &args.script {
        return Ok(Responder::Script(Script::load(path)?));
    }
    let Some(path) = &args.trajectory else {
        bail!("give --script FILE or --trajectory FILE");
    };
    let mut recordings = recording::load(path, None)
        .with_context(|| format!("cannot load the trajectory {}", path.display()))?;
    if recordings.is_empty() {
        bail!("{} holds no recorded session", path.display());
    }
    let first = recordings.swap_remove(0);
    let mut stderr = io::stderr().lock();
    if !recordings.is_empty() {
        writeln!(
            stderr,
            "note: {} holds {} sessions; playing the first, {}",
            path.display(),
            recordings.len() + 1,
            first.name
        )?;
    }
    if !first.stand_ins.is_empty() {
        writeln!(
            stderr,
            "note: the recording lacks {}; stand-ins are used",
            first.stand_ins.join(", ")
        )?;
    }
    Ok(Responder::Trajectory(first))
}

async fn serve(listen: SocketAddr, config: SimConfig) -> anyhow::Result<()> {
    let server = SimServer::bind(listen, config).await?;
    writeln!(
        io::stderr().lock(),
        "mc-sim listening on http://{}",
        server.local_addr()
    )?;
    let stopped = tokio::signal::ctrl_c().await;
    let calls = server.ledger();
    server.shutdown().await?;
    stopped.context("cannot wait for Ctrl-C")?;
    let cost_usd: f64 = calls.iter().map(|call| call.cost_usd).sum();
    writeln!(
        io::stderr().lock(),
        "mc-sim stopped after {} calls costing ${cost_usd:.4}",
        calls.len()
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use mc_sim::TokenScale;
    use mc_sim::server::HistorianMode;

    use crate::cli::{Cli, Command};

    #[test]
    fn needs_exactly_one_responder() {
        let parsed = Cli::try_parse_from(["magic-context", "sim", "--script", "a.json"]).unwrap();
        let Command::Sim(args) = parsed.command else {
            panic!("not sim");
        };
        assert_eq!(args.listen.port(), 0);
        assert_eq!(args.token_scale, TokenScale::ONE);
        assert_eq!(args.historian, HistorianMode::Honest);
        assert!(Cli::try_parse_from(["magic-context", "sim"]).is_err());
        assert!(
            Cli::try_parse_from(["magic-context", "sim", "--script", "a", "--trajectory", "b"])
                .is_err()
        );
    }

    #[test]
    fn token_scale_is_parsed_and_checked() {
        let parsed = Cli::try_parse_from([
            "magic-context",
            "sim",
            "--script",
            "a.json",
            "--token-scale",
            "1.25",
        ])
        .unwrap();
        let Command::Sim(args) = parsed.command else {
            panic!("not sim");
        };
        assert_eq!(args.token_scale, TokenScale::new(1.25).unwrap());
        for bad in ["0", "-2", "nan", "inf"] {
            let flag = format!("--token-scale={bad}");
            let error = Cli::try_parse_from(["magic-context", "sim", "--script", "a.json", &flag])
                .unwrap_err()
                .to_string();
            assert!(
                error.contains("the token scale must be a finite number above 0"),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn historian_mode_is_parsed_and_checked() {
        let parse = |mode: &str| {
            Cli::try_parse_from([
                "magic-context",
                "sim",
                "--script",
                "a.json",
                "--historian",
                mode,
            ])
        };
        let Command::Sim(args) = parse("stall").unwrap().command else {
            panic!("not sim");
        };
        assert_eq!(args.historian, HistorianMode::Stall);
        assert_eq!(args.dreamer, HistorianMode::Honest);
        let error = parse("sleepy").unwrap_err().to_string();
        assert!(
            error.contains(
                "unknown historian mode `sleepy`; use honest, garbage, overloaded, stall or slow"
            ),
            "{error}"
        );
    }
}
