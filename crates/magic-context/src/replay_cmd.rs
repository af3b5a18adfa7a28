//! `magic-context replay`: replays recorded sessions through the baseline strategies on the
//! simulated provider and reports what each would have cost.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use mc_replay::{ReplayOptions, render_svg, replay};
use mc_sim::strategy::StrategyKind;
use mc_sim::{RecordingFormat, TokenScale};

use crate::output::{pretty, write_stdout};
use crate::replay_sweep::{SweepAxis, sweep};

/// Arguments of `replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A recording, or a directory of recordings (every file in it).
    #[arg(value_name = "FILE|DIR")]
    pub path: PathBuf,

    /// The recordings' format: auto, swe-traj, anthropic-capture or claude-code.
    #[arg(long, value_name = "FORMAT", default_value = "auto")]
    pub format: String,

    /// Strategies to compare, comma-separated: passthrough, autocompact, window, clear-tools,
    /// clear-tools-batched, magic [default: all of them].
    #[arg(long, value_name = "LIST")]
    pub strategy: Option<String>,

    /// The context window in tokens [default: the model's].
    #[arg(long, value_name = "TOKENS")]
    pub window: Option<u64>,

    /// Makes the simulated provider count this many times the tokens its calibration says
    /// (1.25 = 25% more); the strategies keep estimating unscaled and must learn the
    /// difference from the reported usage.
    #[arg(long, value_name = "FACTOR", default_value = "1")]
    pub token_scale: TokenScale,

    /// Pads the stand-in system prompt and tools of recordings that keep neither (Claude Code
    /// session files, ~3K tokens where Claude Code sends 15-20K) to at least this many tokens,
    /// with fixed text in the cached prefix.
    #[arg(long, value_name = "TOKENS")]
    pub stand_in_tokens: Option<u64>,

    /// The model every call is priced on.
    #[arg(long, value_name = "NAME", default_value = "claude-sonnet-4-5")]
    pub model: String,

    /// Print one JSON object: {"model", "window", "token_scale", "files", "prices_as_of",
    /// "degenerate_baseline", ["stand_in_tokens", "stand_in_note",] "strategies"}.
    #[arg(long)]
    pub json: bool,

    /// Also draw context size and cumulative cost per request into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// Replays `magic` once per value of a config key (`history.budget_percent=5,8,15`;
    /// repeat the flag for a grid) against one baseline (`--strategy`, default autocompact),
    /// and prints each setting's cost ratio beside the references and user words its
    /// requests kept, marking the settings no other beats on both.
    #[arg(long, value_name = "KEY=V1,V2,…")]
    pub sweep: Vec<SweepAxis>,
}

/// Loads the recordings, replays them and prints the report.
pub fn run(args: &ReplayArgs) -> anyhow::Result<ExitCode> {
    let format = parse_format(&args.format)?;
    let strategies = match &args.strategy {
        Some(list) => StrategyKind::parse_list(list)?,
        None => StrategyKind::ALL.to_vec(),
    };
    let recordings = mc_sim::recording::load(&args.path, format)
        .with_context(|| format!("cannot load recordings from {}", args.path.display()))?;
    let config = engine_config();
    let options = ReplayOptions {
        model: Some(args.model.clone()),
        window_tokens: args.window,
        strategies,
        token_scale: args.token_scale,
        stand_in_tokens: args.stand_in_tokens,
        progress: true,
        probe_recall: false,
        probe_semantic: None,
        engine_config: config.config.clone(),
    };
    if !args.sweep.is_empty() {
        let baseline = match (args.strategy.as_ref(), options.strategies.as_slice()) {
            (None, _) => StrategyKind::Autocompact,
            (Some(_), [one]) => *one,
            (Some(list), _) => bail!("--sweep takes one baseline strategy, not `{list}`"),
        };
        let swept = sweep(&recordings, &options, &config, &args.sweep, baseline)?;
        return write_stdout(&if args.json {
            pretty(&swept.to_json())?
        } else {
            swept.render_table()
        })
        .map(|()| ExitCode::SUCCESS);
    }
    let report = replay(&recordings, &options).context("replay failed")?;
    if let Some(path) = &args.plot {
        let title = format!(
            "{} recordings on {}, window {} tokens",
            report.files, report.model, report.window_tokens
        );
        let svg = render_svg(&title, &report.plot_series(), report.window_tokens);
        std::fs::write(path, svg).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.json {
        write_stdout(&pretty(&report.to_json())?)?;
    } else {
        write_stdout(&report.render_table())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `auto` (detect from the content) or one of the recording formats.
fn parse_format(name: &str) -> anyhow::Result<Option<RecordingFormat>> {
    if name == "auto" {
        return Ok(None);
    }
    match name.parse::<RecordingFormat>() {
        Ok(format) => Ok(Some(format)),
        Err(_) => {
            let valid: Vec<&str> = std::iter::once("auto")
                .chain(RecordingFormat::ALL.iter().map(|format| format.as_str()))
                .collect();
            bail!(
                "unknown format `{name}`; valid formats: {}",
                valid.join(", ")
            )
        }
    }
}

/// The configuration `serve` would run with (the user's config file, or the one
/// `MAGIC_CONTEXT_CONFIG` names), so a replay measures the engine as configured; problems
/// are printed as warnings, as `serve` logs them.
fn engine_config() -> mc_config::LoadedConfig {
    let loaded = mc_config::load(&mc_config::ConfigSources::discover(None));
    for diagnostic in &loaded.diagnostics {
        eprintln!("warning: config: {diagnostic}");
    }
    loaded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_and_unknown_ones_list_the_valid() {
        assert_eq!(parse_format("auto").unwrap(), None);
        assert_eq!(
            parse_format("swe-traj").unwrap(),
            Some(RecordingFormat::SweTraj)
        );
        let error = parse_format("har").unwrap_err().to_string();
        assert_eq!(
            error,
            "unknown format `har`; valid formats: auto, swe-traj, anthropic-capture, claude-code"
        );
    }
}
